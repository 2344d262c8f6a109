// etcdutl as the upstream binary builds it (the commands etcdutl v3.5.13 registers), from the
// module proxy: Talos's etcd image ships it, and a snapshot restore is its job.
package main

import (
	"github.com/spf13/cobra"
	"go.etcd.io/etcd/etcdutl/v3/etcdutl"
	"go.etcd.io/etcd/pkg/v3/cobrautl"
)

func main() {
	root := &cobra.Command{Use: "etcdutl", Short: "An administrative command line tool for etcd3."}
	root.PersistentFlags().StringVarP(&etcdutl.OutputFormat, "write-out", "w", "simple", "set the output format (fields, json, protobuf, simple, table)")
	root.AddCommand(etcdutl.NewBackupCommand(), etcdutl.NewDefragCommand(), etcdutl.NewSnapshotCommand(), etcdutl.NewVersionCommand())
	cobra.EnablePrefixMatching = true
	root.SetHelpTemplate(`{{.UsageString}}`)
	if err := root.Execute(); err != nil {
		cobrautl.ExitWithError(cobrautl.ExitError, err)
	}
}
