// The Kubernetes journey's test program: "serve ADDR" answers every HTTP request with the pod's
// hostname and logs one line per request; "get URL" prints what URL answers and fails when nothing
// does, so a pod's exit code says whether a Service and its DNS name reached the server.
//
// On SIGTERM the server goes on serving for drainTime, then exits 0: an exit code of 0 says that whoever
// stopped it granted the pod at least that much of its termination grace (a kill before then is 137).
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const drainTime = 3 * time.Second

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: echo serve ADDR | echo get URL")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2])
	case "get":
		get(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: echo serve ADDR | echo get URL")
		os.Exit(2)
	}
}

func serve(addr string) {
	hostname, err := os.Hostname()
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s", r.Method, r.URL.Path)
		fmt.Fprintln(w, hostname)
	})
	go drainOnSIGTERM()
	log.Fatal(http.ListenAndServe(addr, nil))
}

func drainOnSIGTERM() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	<-term
	log.Printf("SIGTERM: serving for %s more", drainTime)
	time.Sleep(drainTime)
	log.Print("exiting")
	os.Exit(0)
}

func get(url string) {
	client := http.Client{Timeout: 30 * time.Second}
	res, err := client.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(os.Stdout, res.Body); err != nil {
		log.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		log.Fatalf("%s answered %s", url, res.Status)
	}
}
