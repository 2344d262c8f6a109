package main

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
)

// delegateConf is the configuration the delegate plugin gets: the plugin's delegate dictionary, with
// what flannel owns (name and ipam) set from the network and subnet file, and defaults for the rest.
func delegateConf(conf *pluginConf, subnet *subnetFile) (map[string]any, error) {
	d := conf.Delegate
	if t, ok := d["type"]; ok {
		if _, isString := t.(string); !isString {
			return nil, fmt.Errorf("flannel: delegate.type must be a string")
		}
	}
	for _, owned := range []string{"name", "ipam"} {
		if _, ok := d[owned]; ok {
			return nil, fmt.Errorf("flannel: the delegate dictionary must not set %q: flannel sets it", owned)
		}
	}
	d["name"] = conf.Name
	setDefault(d, "type", "bridge")
	// Traffic leaving the cluster network is masqueraded once: by flanneld when it does, else by the delegate.
	setDefault(d, "ipMasq", !subnet.ipMasq)
	setDefault(d, "mtu", subnet.mtu)
	if d["type"] == "bridge" {
		setDefault(d, "isGateway", true)
	}
	if conf.CNIVersion != "" {
		d["cniVersion"] = conf.CNIVersion
	}
	ipam, err := delegateIPAM(conf.IPAM, subnet)
	if err != nil {
		return nil, err
	}
	d["ipam"] = ipam
	return d, nil
}

func setDefault(m map[string]any, key string, value any) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

// delegateIPAM allocates from this node's subnets (host-local unless the plugin's ipam names another
// type) and routes each cluster network through the pod's gateway, after any routes the ipam lists.
func delegateIPAM(ipam map[string]any, subnet *subnetFile) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range ipam {
		out[k] = v
	}
	setDefault(out, "type", "host-local")
	ranges := [][]map[string]string{}
	for _, sn := range []*net.IPNet{subnet.subnet, subnet.ip6Subnet} {
		if sn != nil {
			ranges = append(ranges, []map[string]string{{"subnet": sn.String()}})
		}
	}
	out["ranges"] = ranges
	routes := []types.Route{}
	if listed, ok := ipam["routes"]; ok {
		encoded, _ := json.Marshal(listed)
		if err := json.Unmarshal(encoded, &routes); err != nil {
			return nil, fmt.Errorf("flannel: ipam.routes: %w", err)
		}
	}
	for _, nw := range append(append([]*net.IPNet{}, subnet.networks...), subnet.ip6Networks...) {
		routes = append(routes, types.Route{Dst: *nw})
	}
	out["routes"] = routes
	return out, nil
}
