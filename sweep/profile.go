package sweep

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/viper"
)

// ProfileEnv is the environment variable that selects a profile when no
// --profile flag (LoadProfile's argument) does.
const ProfileEnv = "MSJFARM_PROFILE"

// Profile is one named entry of a sweep file's profiles block: values laid
// over the file when the profile is selected, so that one file carries both
// a quick default and, for instance, the size its paper used:
//
//	replications: 3
//	run: {arrivals: 1e5, warmup: 1e4, deadline: 1h}
//	profiles:
//	  paper: {replications: 30, run: {arrivals: 1e7, warmup: 1e6, deadline: 4h}}
//
// A profile may set only the keys that size or refine a run, never what is
// simulated (system, policies, seed, name): replications; any key of run
// (merged key by key, so unnamed run keys keep the file's values); axes (a
// named axis's list replaces the file's list, a new name adds an axis; axes
// not named keep theirs, and zip groups are the file's); precision (merged
// key by key into the file's block, or forming one). The keys are checked
// like the file's (unknown keys and wrong types are errors naming the key)
// for every profile, selected or not, and so are the values when the file
// is planned (checkOtherProfiles). Environment overrides (MSJFARM_<KEY>)
// still win over the profile. Profile names are case-insensitive (the
// reader folds keys to lower case).
type Profile struct {
	Replications int              `mapstructure:"replications" json:"replications,omitempty"`
	Run          *RunSpec         `mapstructure:"run" json:"run,omitempty"`
	Axes         map[string][]any `mapstructure:"axes" json:"axes,omitempty"`
	Precision    *Precision       `mapstructure:"precision" json:"precision,omitempty"`
}

// ProfileNames lists the file's profiles, sorted.
func (f *File) ProfileNames() []string {
	names := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// overlayProfile merges the profile named name of the file read into v (and
// decoded, hence checked, as f) into v's configuration. Environment
// bindings keep precedence over the merged values.
func overlayProfile(v *viper.Viper, f *File, name string) error {
	key := strings.ToLower(name)
	if _, ok := f.Profiles[key]; !ok {
		if len(f.Profiles) == 0 {
			return fmt.Errorf("profile %s: the sweep file has no profiles block", quoted(name))
		}
		return fmt.Errorf("profile %s: not in the sweep file (its profiles: %s)", quoted(name), strings.Join(f.ProfileNames(), ", "))
	}
	profiles, _ := v.Get("profiles").(map[string]any)
	p, _ := profiles[key].(map[string]any)
	if len(p) == 0 {
		return nil // an empty profile: the file as written
	}
	// Copy the top level so the profiles block itself is not aliased into
	// the keys it overlays (viper's merge keeps references to the source).
	overlay := make(map[string]any, len(p))
	for k, val := range p {
		overlay[k] = val
	}
	return v.MergeConfigMap(overlay)
}
