// flanneld for the ghcr.io/siderolabs/flannel:v0.25.3 image Talos v1.7.6's manifests run. The Go
// module proxy refuses v0.25.3 itself; v0.25.6 differs from it only in Windows files and patch
// releases of its dependencies, so the Linux program is v0.25.3's. Tencent Cloud's VPC client, which
// flannel's tencent-vpc backend links, is served in no version the checksum database knows; a
// stand-in of our own (./tencentvpc) takes its place and fails every call. Tencent's common module
// is raised from v1.0.990 to v1.1.0, a version the checksum database knows.
module basalt.local/images/flannel

go 1.22

require (
	github.com/flannel-io/flannel v0.25.6
	github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common v1.1.0
)

replace github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc => ./tencentvpc
