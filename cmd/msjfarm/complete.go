package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// campaignArgs are the commands whose positional arguments are campaigns
// (id, name or id prefix), completed from the store.
var campaignArgs = map[string]bool{"status": true, "cancel": true, "results": true, "report": true, "reproduce": true}

// sweepArgs are the commands whose positional argument is a sweep file.
var sweepArgs = map[string]bool{"run": true, "submit": true, "limit": true}

// addCompletions registers shell completion of the enumerable values of
// cc's flags and arguments (cobra's __complete protocol, which the
// scripts of `msjfarm completion bash|zsh|fish` call): policies (the
// built-in catalogue and the plugins on the search path), workloads,
// runners, the sweep file's profiles, campaigns in --storage, and sweep
// files for run, submit and limit. A completion never creates or writes
// anything: a missing store completes nothing.
func addCompletions(cc *cobra.Command, name string) {
	fixed := func(values ...string) func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(values, prefix), cobra.ShellCompDirectiveNoFileComp
		}
	}
	reg := func(flag string, f func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective)) {
		if cc.Flags().Lookup(flag) != nil {
			_ = cc.RegisterFlagCompletionFunc(flag, f)
		}
	}
	reg("policy", func(c *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(completePolicies(c), prefix), cobra.ShellCompDirectiveNoFileComp
	})
	reg("workload", fixed(workload.Names()...))
	reg("runner", fixed("auto", "plugin", "inprocess"))
	reg("profile", func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var names []string
		for _, a := range args {
			if f, err := sweep.Parse(readSmall(a), sweepFormat(a)); err == nil {
				names = append(names, f.ProfileNames()...)
			}
		}
		return withPrefix(names, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	switch {
	case campaignArgs[name]:
		cc.ValidArgsFunction = func(c *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(completeCampaigns(c), prefix), cobra.ShellCompDirectiveNoFileComp
		}
	case sweepArgs[name]:
		cc.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return []cobra.Completion{"yaml", "yml", "toml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		}
	}
}

func withPrefix(values []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, prefix) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// completePolicies is the built-in policies and those the plugin binaries
// on the search path declare, by their binary names
// (msjfarm-policy-<family>: the family names its policies' prefix).
func completePolicies(c *cobra.Command) []string {
	names := builtin.Names()
	var path string
	if f := c.Flags().Lookup("plugin-path"); f != nil {
		path = f.Value.String()
	}
	for _, dir := range pluginhost.SearchPath(path, nil) {
		bins, _ := filepath.Glob(filepath.Join(dir, "msjfarm-policy-*"))
		for _, b := range bins {
			names = append(names, strings.TrimPrefix(filepath.Base(b), "msjfarm-policy-"))
		}
	}
	return names
}

// completeCampaigns lists the names and ids of the campaigns in the
// command's --storage (its value, the environment's, or the default),
// opened without creating it, within a few seconds.
func completeCampaigns(c *cobra.Command) []string {
	store := os.Getenv("MSJFARM_STORAGE")
	if f := c.Flags().Lookup("storage"); f != nil && (f.Changed || store == "") {
		store = f.Value.String()
	}
	if store == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := storage.Open(ctx, store, storage.NoCreate())
	if err != nil {
		return nil
	}
	es, err := archive.List(ctx, st)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		if e.Name != "" {
			out = append(out, e.Name)
		}
		out = append(out, e.ID)
	}
	return out
}

// readSmall reads a sweep file for completion, at most 4 MiB: a key
// press does not read a generated sweep of 10⁶ values (that one is not
// completed).
func readSmall(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 4<<20)
	n, _ := f.Read(b)
	return b[:n]
}

func sweepFormat(path string) string {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if ext == "yml" {
		return "yaml"
	}
	return ext
}
