package sandbox

import (
	"os"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "require": Require, "Best-Effort": BestEffort, " off ": Off} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("on"); err == nil || !strings.Contains(err.Error(), "--plugin-sandbox") {
		t.Errorf("ParseMode(on): want an error naming the flag, got %v", err)
	}
}

// The plugin user: root defaults to nobody and may not pick root; a bad
// name is an error naming the flag.
func TestUser(t *testing.T) {
	if _, err := New(Options{Mode: Off, User: "no-such-user-here"}); err == nil || !strings.Contains(err.Error(), "--plugin-user") {
		t.Errorf("unknown user: want an error naming --plugin-user, got %v", err)
	}
	s, err := New(Options{Mode: Off, User: "self"})
	if err != nil || s.UID() != -1 {
		t.Errorf("self: uid %d, %v; want the host's (-1)", s.UID(), err)
	}
	if os.Geteuid() != 0 {
		return
	}
	if s, err := New(Options{Mode: Off}); err != nil || s.UID() <= 0 {
		t.Errorf("root's default plugin user: uid %d, %v; want nobody", s.UID(), err)
	}
	if _, err := New(Options{Mode: Off, User: "0"}); err == nil || !strings.Contains(err.Error(), "must not run as root") {
		t.Errorf("--plugin-user 0: want a refusal, got %v", err)
	}
	if s, err := New(Options{Mode: Off, User: "1234:5678"}); err != nil || s.uid != 1234 || s.gid != 5678 {
		t.Errorf("1234:5678: %+v, %v", s, err)
	}
}

// The address-space limit: 2 GiB + 2.5 GiB per slot (512 MiB × 5), or
// the explicit value: 1 slot = 4.5 GiB, 4 slots = 12 GiB.
func TestLimit(t *testing.T) {
	s := &Sandbox{}
	if got := s.Limit(1); got != 4608<<20 {
		t.Errorf("1 slot: %d MiB, want 4608", got>>20)
	}
	if got := s.Limit(4); got != 12<<30 {
		t.Errorf("4 slots: %d MiB, want 12288", got>>20)
	}
	s.memory = 3 << 30
	if got := s.Limit(4); got != 3<<30 {
		t.Errorf("explicit: %d, want 3 GiB", got)
	}
}
