package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Entry is one campaign found in storage: what `msjfarm results` lists
// and what names resolve against.
type Entry struct {
	ID      string    `json:"campaign"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Tasks is the manifest's task count (0 when it has none yet);
	// Finished counts the campaign's result entries (results and
	// failures) in storage now, so it is current even while a run is
	// going on.
	Tasks    int `json:"tasks"`
	Finished int `json:"finished"`
	// State is the manifest's state when it was last written (running,
	// done, cancelled; "" without a manifest; StateDamaged).
	State string `json:"state"`
	// Done and Failed are the manifest's counts when it was last written
	// (results and failures), so that a finished campaign's failures are
	// told from its results: Finished counts both.
	Done   int `json:"done"`
	Failed int `json:"failed"`
}

// List returns the campaigns in st (every campaigns/<id>/ with a spec),
// oldest first.
func List(ctx context.Context, st storage.Store) ([]Entry, error) {
	keys, err := st.List(ctx, "campaigns/")
	if err != nil {
		return nil, err
	}
	byID := map[string]*Entry{}
	hasSpec := map[string]bool{}
	for _, k := range keys {
		rest := strings.TrimPrefix(k, "campaigns/")
		id, tail, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		e := byID[id]
		if e == nil {
			e = &Entry{ID: id}
			byID[id] = e
		}
		if tail == "spec.yaml" {
			hasSpec[id] = true
		}
		if _, ok := storage.ResultTaskID(id, k); ok {
			e.Finished++
		}
	}
	var out []Entry
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	sem := make(chan struct{}, 8)
	for id, e := range byID {
		if !hasSpec[id] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := fill(ctx, st, e)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out = append(out, *e)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// StateDamaged is the listed state of a campaign whose manifest is not
// JSON (cut short, edited by hand).
const StateDamaged = "damaged manifest"

// fill reads e's manifest, or its spec when it has none or a damaged one.
func fill(ctx context.Context, st storage.Store, e *Entry) error {
	data, err := st.Get(ctx, storage.ManifestKey(e.ID))
	if err == nil {
		var m Manifest
		if err := json.Unmarshal(data, &m); err == nil {
			e.Name, e.Created, e.Tasks, e.State = m.Name, m.Created, m.Tasks, m.State
			e.Done, e.Failed = m.Done, m.Failed
			return nil
		}
		// A damaged manifest is this campaign's problem, shown as its
		// state (reading it says what is wrong): it failed the whole
		// listing, and status, results and every lookup by name in the
		// store with it.
		e.State = StateDamaged
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	spec, err := st.Get(ctx, storage.CampaignSpecKey(e.ID))
	if err != nil {
		return err
	}
	if f, err := sweep.Parse(spec, "yaml"); err == nil {
		e.Name = f.Name
	}
	if info, err := st.Stat(ctx, storage.CampaignSpecKey(e.ID)); err == nil {
		e.Created = info.ModTime.UTC()
	}
	return nil
}

// Candidate is a campaign a user may mean: its id, name and creation time.
type Candidate struct {
	ID      string
	Name    string
	Created time.Time
}

// Resolve finds the campaign arg names among cands: an exact id; else the
// latest campaign with that name; else the one campaign whose id starts
// with arg. An unknown name, or an id prefix several campaigns share, is
// an error listing the candidates.
func Resolve(arg string, cands []Candidate) (string, error) {
	if arg == "" {
		return "", errors.New("no campaign given")
	}
	var named, prefixed []Candidate
	for _, c := range cands {
		switch {
		case c.ID == arg:
			return c.ID, nil
		case c.Name == arg:
			named = append(named, c)
		case strings.HasPrefix(c.ID, arg):
			prefixed = append(prefixed, c)
		}
	}
	latest := func(cs []Candidate) Candidate {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Created.After(cs[j].Created) })
		return cs[0]
	}
	switch {
	case len(named) == 1:
		return named[0].ID, nil
	case len(named) > 1:
		l := latest(named)
		if l.Created.Equal(named[1].Created) {
			return "", fmt.Errorf("campaign name %q is ambiguous: %s", arg, describe(named))
		}
		return l.ID, nil
	case len(prefixed) == 1:
		return prefixed[0].ID, nil
	case len(prefixed) > 1:
		return "", fmt.Errorf("campaign id prefix %q is ambiguous: %s", arg, describe(prefixed))
	}
	if len(cands) == 0 {
		return "", fmt.Errorf("unknown campaign %q: there are no campaigns", arg)
	}
	return "", fmt.Errorf("unknown campaign %q; campaigns: %s", arg, describe(cands))
}

// ResolveOne is Resolve for a command that changes what it names
// (cancel): an argument that could mean more than one campaign is an
// error listing them all, where Resolve takes the latest of a name, or
// a name over the id it is a prefix of. "msjfarm cancel twin" cancelled
// one of two running campaigns named twin without a word.
func ResolveOne(arg string, cands []Candidate) (string, error) {
	var matches []Candidate
	for _, c := range cands {
		switch {
		case c.ID == arg:
			return c.ID, nil
		case c.Name == arg || strings.HasPrefix(c.ID, arg):
			matches = append(matches, c)
		}
	}
	if len(matches) == 1 {
		return matches[0].ID, nil
	}
	if len(matches) > 1 {
		return "", fmt.Errorf("%q could mean %d campaigns: %s; give the campaign id", arg, len(matches), describe(matches))
	}
	return Resolve(arg, cands) // its error: unknown, with the campaigns
}

func describe(cs []Candidate) string {
	cs = append([]Candidate(nil), cs...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Created.After(cs[j].Created) })
	parts := make([]string, 0, len(cs))
	for i, c := range cs {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-20))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s, created %s)", c.Name, c.ID, c.Created.Format(time.RFC3339)))
	}
	return strings.Join(parts, ", ")
}

// Candidates are the entries as name-resolution candidates.
func Candidates(es []Entry) []Candidate {
	out := make([]Candidate, len(es))
	for i, e := range es {
		out[i] = Candidate{ID: e.ID, Name: e.Name, Created: e.Created}
	}
	return out
}

// IsCampaignID: s has the form of a campaign id (sweep.Campaign.ID: 16
// lower-case hex digits).
func IsCampaignID(s string) bool { return storage.LowerHex(s, 16) }

// ResolveIn resolves arg (id, name or id prefix) against the campaigns in
// st.
func ResolveIn(ctx context.Context, st storage.Store, arg string) (string, error) {
	// An exact id is found without listing the whole store. Only an id
	// is tried so: a name of 300 characters made the key's file name too
	// long, and the error ended the lookup.
	if IsCampaignID(arg) {
		if _, err := st.Stat(ctx, storage.CampaignSpecKey(arg)); err == nil {
			return arg, nil
		} else if !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrInvalidKey) {
			return "", err
		}
	}
	es, err := List(ctx, st)
	if err != nil {
		return "", err
	}
	id, err := Resolve(arg, Candidates(es))
	if err != nil {
		return "", fmt.Errorf("%w (in %s)", err, st.URL())
	}
	return id, nil
}
