module basalt.test/echo

go 1.22
