package pluginhost

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BinaryPrefix is the naming convention of plugin binaries:
// msjfarm-policy-<family>, e.g. msjfarm-policy-fcfs.
const BinaryPrefix = "msjfarm-policy-"

// EnvPath is the environment variable holding plugin directories,
// colon-separated like PATH.
const EnvPath = "MSJFARM_PLUGIN_PATH"

// SearchPath returns the directories searched for plugin binaries, in
// order: flagDirs (a colon-separated -plugin-path flag), $MSJFARM_PLUGIN_PATH,
// configDirs (from a configuration file), then the directory of the running
// msjfarm executable (where release archives and the Docker image put the
// plugins) and its plugins/ subdirectory (where `make build` puts them:
// bin/msjfarm and bin/plugins/). Empty entries and repeats are dropped.
func SearchPath(flagDirs string, configDirs []string) []string {
	var dirs []string
	dirs = append(dirs, filepath.SplitList(flagDirs)...)
	dirs = append(dirs, filepath.SplitList(os.Getenv(EnvPath))...)
	dirs = append(dirs, configDirs...)
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dirs = append(dirs, filepath.Dir(exe), filepath.Join(filepath.Dir(exe), "plugins"))
	}
	seen := map[string]bool{}
	out := dirs[:0]
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if a, err := filepath.Abs(d); err == nil {
			d = a
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Found is a plugin binary found on the search path.
type Found struct {
	// Family is the name after the prefix: "fcfs" for msjfarm-policy-fcfs.
	Family string
	// Path is the binary that wins: the first on the search path.
	Path string
	// Shadowed lists binaries of the same name later on the path.
	Shadowed []string
}

// Discover lists the plugin binaries in dirs (regular executable files
// named msjfarm-policy-*), sorted by family. Like PATH, the first directory
// holding a name wins. Unreadable or missing directories are skipped.
func Discover(dirs []string) []Found {
	byName := map[string]*Found{}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if !strings.HasPrefix(name, BinaryPrefix) || len(name) == len(BinaryPrefix) {
				continue
			}
			p := filepath.Join(d, name)
			if !isExecutable(p) {
				continue
			}
			fam := strings.TrimPrefix(name, BinaryPrefix)
			if f, ok := byName[fam]; ok {
				f.Shadowed = append(f.Shadowed, p)
				continue
			}
			byName[fam] = &Found{Family: fam, Path: p}
		}
	}
	out := make([]Found, 0, len(byName))
	for _, f := range byName {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Family < out[j].Family })
	return out
}

// Lookup resolves what a user typed to a binary: a path (anything with a
// path separator, or an existing file), a binary name (msjfarm-policy-fcfs)
// or a family name (fcfs) searched in dirs.
func Lookup(dirs []string, arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("no plugin named")
	}
	if strings.ContainsRune(arg, os.PathSeparator) || fileExists(arg) {
		p, err := filepath.Abs(arg)
		if err != nil {
			return "", err
		}
		if !isExecutable(p) {
			return "", fmt.Errorf("plugin %s: not an executable file", p)
		}
		return p, nil
	}
	fam := strings.TrimPrefix(arg, BinaryPrefix)
	for _, f := range Discover(dirs) {
		if f.Family == fam {
			return f.Path, nil
		}
	}
	return "", fmt.Errorf("no plugin binary %s%s on the search path (%s; set -plugin-path or $%s)",
		BinaryPrefix, fam, strings.Join(dirs, string(os.PathListSeparator)), EnvPath)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
