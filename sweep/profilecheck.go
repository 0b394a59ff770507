package sweep

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/viper"
)

// A profile's keys and types were checked whenever its file was read, but
// its values only when it was selected: a file whose quick default ran
// for weeks could hold "paper: {replications: 0}" or an axis value of
// −1 in the profile its paper needed, found the day that run was
// submitted. Planning a file now also plans each profile not selected,
// as if selected, and refuses the file at the first mistake, named by
// the profile and placed at its line. The profile is laid over the file's
// settings as read (its profiles block left out) by the merge that
// selects one (overlayProfile), with the environment's overrides on top
// as when it is selected, so the campaign checked is the one selecting
// it plans; the file is not read again (re-reading a 110 KB file of 4000
// profiles cost half a second per profile). Two bounds keep it cheap
// beside the selected campaign's own planning: at most maxOtherProfiles
// profiles are checked, and a profile's points are planned one by one
// only up to maxProfilePoints of them. What a bound leaves out is said in
// the campaign's warnings, never passed over in silence. The policies'
// trial on a point's workload (a plugin's run of 200 arrivals) is left
// to the profile's own planning: a profile cannot change the policies,
// and the trial of each of its systems would multiply a plugin sweep's
// start-up.

// maxOtherProfiles bounds the profiles not selected that are checked:
// a hand-written file has a few; a generated one of thousands would cost
// a planning of the file each.
const maxOtherProfiles = 256

// maxProfilePoints bounds the points of a profile not selected that are
// planned one by one (its values at each point: rates, loads, shares);
// past it only what is checked before any point is (replications, run,
// precision, axis names and zip groups, sizes) is.
const maxProfilePoints = 10_000

// otherProfiles is what checkOtherProfiles needs of a file read: its
// settings as read, environment overrides included, without the profiles
// block, and that block.
type otherProfiles struct {
	base, profiles map[string]any
}

// keepForProfiles keeps what checkOtherProfiles needs when the file read
// into v (decoded as f) has a profile other than the one selected
// (s.profile). It is called before the selected profile is laid over v.
func (s *source) keepForProfiles(f *File, v *viper.Viper) {
	n := len(f.Profiles)
	if _, ok := f.Profiles[s.profile]; ok {
		n--
	}
	if n <= 0 {
		return
	}
	base := v.AllSettings()
	profiles, _ := base["profiles"].(map[string]any)
	delete(base, "profiles")
	s.others = &otherProfiles{base: base, profiles: profiles}
}

// schemaOnly is a catalogue without its optional trials (WorkloadChecker,
// SpecChecker): what a profile not selected is planned against. Its
// policies are the file's, planned already, so no other option matters.
type schemaOnly struct{ Catalog }

// checkOtherProfiles plans each profile of the file f was read from that
// is not the selected one, within the bounds above, and returns the first
// mistake, named by its profile; warnings says what the bounds left out.
// A File with no such profile, or none read from a file, has nothing to
// check.
func checkOtherProfiles(f *File, cat Catalog) (warnings []string, err error) {
	if f.src == nil || f.src.others == nil {
		return nil, nil
	}
	o := f.src.others
	f.src.others = nil // checked once, however often f is planned
	var skipped, unwalked []string
	checked := 0
	for _, name := range f.ProfileNames() {
		if name == f.src.profile {
			continue
		}
		if checked == maxOtherProfiles {
			skipped = append(skipped, name)
			continue
		}
		checked++
		g, err := o.overlay(f.src, name)
		if err != nil {
			return nil, inProfile(name, err)
		}
		_, err = planFile(g, schemaOnly{cat}, Size{Points: maxProfilePoints})
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			unwalked = append(unwalked, fmt.Sprintf("%s (%d points)", name, tl.Points))
		case err != nil:
			return nil, inProfile(name, g.src.locate(err))
		}
	}
	if len(skipped) > 0 {
		warnings = append(warnings, fmt.Sprintf("profiles: %d of the file's profiles were not checked (%s): only the first %d are; each is checked when selected (--profile NAME, or submit --dry-run --profile NAME)",
			len(skipped), clipNames(skipped), maxOtherProfiles))
	}
	if len(unwalked) > 0 {
		warnings = append(warnings, fmt.Sprintf("profiles: %s: more than %d points, so their values were checked but not at each point (rates, loads, shares): each is checked when selected (--profile NAME, or submit --dry-run --profile NAME)",
			clipNames(unwalked), maxProfilePoints))
	}
	return warnings, nil
}

// overlay is the file as selecting profile name makes it: its settings
// with the profile merged over them (overlayProfile's merge) and the
// environment's overrides over both, decoded, with positions from src
// looked up under the profile.
func (o *otherProfiles) overlay(src *source, name string) (*File, error) {
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	if err := v.MergeConfigMap(deepCopy(o.base).(map[string]any)); err != nil {
		return nil, err
	}
	if p, _ := o.profiles[name].(map[string]any); len(p) > 0 {
		if err := v.MergeConfigMap(deepCopy(p).(map[string]any)); err != nil {
			return nil, err
		}
	}
	for k, val := range src.env {
		v.Set(strings.ReplaceAll(k, ".", "::"), val)
	}
	g, err := decodeFile(v)
	if err != nil {
		return nil, err
	}
	gs := *src
	gs.profile, gs.others = name, nil
	g.src = &gs
	return g, nil
}

// deepCopy copies the maps and lists of a settings value: viper's merge
// keeps references to what it merges, and each profile is laid over the
// same settings.
func deepCopy(x any) any {
	switch x := x.(type) {
	case map[string]any:
		m := maps.Clone(x)
		for k, v := range m {
			m[k] = deepCopy(v)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, v := range x {
			l[i] = deepCopy(v)
		}
		return l
	}
	return x
}

// inProfile names the profile a mistake was found in, which was not the
// one selected: the file's own planning passed.
func inProfile(name string, err error) error {
	try := name
	if len(try) > maxQuoted {
		try = "NAME" // quoted, clipped, before it
	}
	note := fmt.Sprintf(" (in profile %s, not selected: every profile of a file is checked; try it with --profile %s)", quoted(name), try)
	var es Errors
	if errors.As(err, &es) {
		for _, e := range es {
			e.Msg += note
		}
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		e.Msg += note
		return e
	}
	return fmt.Errorf("%w%s", err, note)
}

// clipNames lists names, the first ten of them.
func clipNames(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}
