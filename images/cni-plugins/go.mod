// The CNI plugins of the install-cni image: containernetworking/plugins at the version Talos v1.7's
// extras build them from (siderolabs/pkgs' cni_version), and our flannel meta-plugin (./cmd/flannel),
// built on the CNI library version those plugins require.
module basalt.local/images/cni-plugins

go 1.22

require (
	github.com/containernetworking/cni v1.1.2
	github.com/containernetworking/plugins v1.4.1
)
