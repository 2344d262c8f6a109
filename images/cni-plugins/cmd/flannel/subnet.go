package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// subnetFile is what flanneld writes to /run/flannel/subnet.env: the cluster networks, this node's
// subnets of them, the MTU of its backend and whether flanneld masquerades.
type subnetFile struct {
	networks    []*net.IPNet
	subnet      *net.IPNet
	ip6Networks []*net.IPNet
	ip6Subnet   *net.IPNet
	mtu         uint
	ipMasq      bool
}

func readSubnetFile(path string) (*subnetFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flannel: reading the subnet file (is flanneld running?): %w", err)
	}
	defer f.Close()
	s := &subnetFile{}
	seen := map[string]bool{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, _ := strings.Cut(scanner.Text(), "=")
		seen[key] = true
		var err error
		switch key {
		case "FLANNEL_NETWORK":
			s.networks, err = parseNetworks(value)
		case "FLANNEL_IPV6_NETWORK":
			s.ip6Networks, err = parseNetworks(value)
		case "FLANNEL_SUBNET":
			_, s.subnet, err = net.ParseCIDR(value)
		case "FLANNEL_IPV6_SUBNET":
			_, s.ip6Subnet, err = net.ParseCIDR(value)
		case "FLANNEL_MTU":
			var mtu uint64
			mtu, err = strconv.ParseUint(value, 10, 32)
			s.mtu = uint(mtu)
		case "FLANNEL_IPMASQ":
			s.ipMasq = value == "true"
		}
		if err != nil {
			return nil, fmt.Errorf("flannel: %s: %s: %w", path, key, err)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("flannel: reading %s: %w", path, err)
	}
	missing := []string{}
	if len(s.networks) == 0 && len(s.ip6Networks) == 0 {
		missing = append(missing, "FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK")
	}
	if s.subnet == nil && s.ip6Subnet == nil {
		missing = append(missing, "FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET")
	}
	for _, key := range []string{"FLANNEL_MTU", "FLANNEL_IPMASQ"} {
		if !seen[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("flannel: %s is missing %s", path, strings.Join(missing, ", "))
	}
	return s, nil
}

// parseNetworks reads a comma-separated list of CIDRs, each network once.
func parseNetworks(value string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	seen := map[string]bool{}
	for _, cidr := range strings.Split(value, ",") {
		_, nw, err := net.ParseCIDR(cidr)
		if err != nil {
			return nil, err
		}
		if !seen[nw.String()] {
			seen[nw.String()] = true
			out = append(out, nw)
		}
	}
	return out, nil
}
