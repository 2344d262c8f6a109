// The flannel CNI meta-plugin: it joins a pod to the node's flannel subnet by handing a delegate
// plugin (bridge unless configured otherwise) a configuration made of its own and of the subnet file
// flanneld writes, and keeps that configuration per container so DEL undoes exactly what ADD did.
// It behaves as flannel-io/cni-plugin v1.2.0 (the version Talos v1.7's install-cni image holds), whose
// module the Go module proxy does not serve: the same keys, defaults, delegate configuration and files.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

const (
	defaultSubnetFile = "/run/flannel/subnet.env"
	defaultDataDir    = "/var/lib/cni/flannel"
)

// pluginConf is the plugin's network configuration. Its ipam replaces the typed one of types.NetConf:
// it is passed on to the delegate with keys the typed form does not know.
type pluginConf struct {
	types.NetConf
	IPAM          map[string]any `json:"ipam,omitempty"`
	SubnetFile    string         `json:"subnetFile"`
	DataDir       string         `json:"dataDir"`
	Delegate      map[string]any `json:"delegate"`
	RuntimeConfig map[string]any `json:"runtimeConfig,omitempty"`
}

func parseConf(stdin []byte) (*pluginConf, error) {
	conf := &pluginConf{SubnetFile: defaultSubnetFile, DataDir: defaultDataDir}
	if err := json.Unmarshal(stdin, conf); err != nil {
		return nil, fmt.Errorf("flannel: parsing the network configuration: %w", err)
	}
	if conf.Delegate == nil {
		conf.Delegate = map[string]any{}
	}
	// The runtime's capabilities (port mappings, bandwidth, ...) are the delegate's to act on.
	if conf.RuntimeConfig != nil {
		conf.Delegate["runtimeConfig"] = conf.RuntimeConfig
	}
	return conf, nil
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	subnet, err := readSubnetFile(conf.SubnetFile)
	if err != nil {
		return err
	}
	delegate, err := delegateConf(conf, subnet)
	if err != nil {
		return err
	}
	encoded, err := json.Marshal(delegate)
	if err != nil {
		return fmt.Errorf("flannel: encoding the delegate's configuration: %w", err)
	}
	if err := saveDelegateConf(conf.DataDir, args.ContainerID, encoded); err != nil {
		return err
	}
	result, err := invoke.DelegateAdd(context.Background(), delegate["type"].(string), encoded, nil)
	if err != nil {
		return fmt.Errorf("flannel: delegate ADD: %w", err)
	}
	return result.Print()
}

func cmdDel(args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	file := filepath.Join(conf.DataDir, args.ContainerID)
	encoded, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		// Never added, or already deleted: DEL must succeed when there is nothing left to undo.
		return nil
	}
	if err != nil {
		return fmt.Errorf("flannel: reading the delegate's configuration: %w", err)
	}
	var delegate types.NetConf
	if err := json.Unmarshal(encoded, &delegate); err != nil {
		// Nothing can be undone without it; the interface goes with the node's next boot.
		fmt.Fprintf(os.Stderr, "flannel: %s is not a network configuration: %v\n", file, err)
		return nil
	}
	if err := invoke.DelegateDel(context.Background(), delegate.Type, encoded, nil); err != nil {
		return fmt.Errorf("flannel: delegate DEL: %w", err)
	}
	// The file stays when the delegate failed, so the runtime's retry can still undo the ADD.
	_ = os.Remove(file)
	return nil
}

// cmdCheck accepts every container, as flannel's own plugin does.
func cmdCheck(*skel.CmdArgs) error { return nil }

// saveDelegateConf writes the configuration ADD hands the delegate, synced, for DEL to hand it back.
func saveDelegateConf(dataDir, containerID string, encoded []byte) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("flannel: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, containerID), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("flannel: %w", err)
	}
	_, err = f.Write(encoded)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("flannel: saving the delegate's configuration: %w", err)
	}
	return nil
}

func main() {
	skel.PluginMain(cmdAdd, cmdCheck, cmdDel, version.All, "CNI flannel plugin, compatible with flannel-io/cni-plugin v1.2.0")
}
