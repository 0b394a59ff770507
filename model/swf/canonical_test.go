package swf

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

const canonicalInput = `; Version: 2.2
; Computer: a secret machine name that must not travel
; MaxProcs: 8
; MaxNodes: 4
1 100 5 30 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1
2 90.5 0 12.25 -1 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 -1 0 10 1 -1 -1 1 10
4 120 0 -1 1
5 130 0 10 16
6 140 0 10 -1
7 150 0 0.001 8 extra columns ignored -1 x
`

// TestCanonicalReadsTheSame: the canonical form reads as the same trace
// as its input for several k (jobs, skip counts by reason, FromRequested,
// header values), drops every comment but MaxProcs/MaxNodes, is a fixed
// point, and is the same for the gzipped input.
func TestCanonicalReadsTheSame(t *testing.T) {
	c, err := Canonical(strings.NewReader(canonicalInput), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(c, []byte("secret")) || bytes.Contains(c, []byte("extra")) {
		t.Fatalf("canonical form kept text the replay does not read:\n%s", c)
	}
	for _, k := range []int{0, 2, 8, 16} {
		want, err := Read(strings.NewReader(canonicalInput), k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(c), k)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("k=%d: canonical reads as\n%+v\nwant\n%+v", k, got, want)
		}
	}
	again, err := Canonical(bytes.NewReader(c), Limits{})
	if err != nil || !bytes.Equal(again, c) {
		t.Fatalf("not a fixed point (err %v):\n%s\nthen\n%s", err, c, again)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(canonicalInput))
	zw.Close()
	fromGz, err := Canonical(&gz, Limits{})
	if err != nil || !bytes.Equal(fromGz, c) {
		t.Fatalf("gzipped input: err %v, canonical differs", err)
	}
}

// TestCanonicalShapeCountsAsRead: the shape CanonicalShape gathers says
// for every k what Read of the canonical form says (header, servers, job
// lines, skip counts by reason, jobs kept), ErrNoServers included, and
// the form is Canonical's.
func TestCanonicalShapeCountsAsRead(t *testing.T) {
	noHeader := "1 0 0 10 3\n2 5 0 10 9\n"
	for _, in := range []string{canonicalInput, noHeader} {
		c, sh, err := CanonicalShape(strings.NewReader(in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := Canonical(strings.NewReader(in), Limits{}); !bytes.Equal(c, want) {
			t.Fatalf("CanonicalShape's form differs from Canonical's")
		}
		for _, k := range []int{0, 1, 2, 3, 4, 8, 9, 16} {
			tr, rerr := Read(bytes.NewReader(c), k)
			got, serr := sh.At(k)
			if rerr != nil || serr != nil {
				if !errors.Is(rerr, ErrNoServers) || !errors.Is(serr, ErrNoServers) {
					t.Fatalf("k=%d: Read %v, At %v", k, rerr, serr)
				}
				continue
			}
			want := Counts{MaxProcs: tr.MaxProcs, MaxNodes: tr.MaxNodes, K: tr.K, Lines: tr.Lines, Kept: len(tr.Jobs), Skipped: tr.Skipped}
			if got != want {
				t.Errorf("k=%d: shape %+v, Read %+v", k, got, want)
			}
		}
	}
}

// TestCanonicalRefusesNonSWF: files that are not traces — an environment
// block (NUL-separated KEY=value), a shadow file, a binary — are refused.
func TestCanonicalRefusesNonSWF(t *testing.T) {
	for name, in := range map[string]string{
		"environ": "HOME=/root\x00MSJFARM_S3_SECRET_KEY=hunter2\x00PATH=/bin\x00",
		"shadow":  "root:$6$salt$hash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
		"binary":  "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"words":   "1 2 3 four 5\n",
	} {
		if c, err := Canonical(strings.NewReader(in), Limits{}); err == nil {
			t.Errorf("%s: accepted as SWF:\n%s", name, c)
		}
	}
}

// TestCanonicalPinned pins the canonical form's bytes (their sha256) of
// three traces. A trace campaign's id, and so every stored and archived
// result of it, is a hash over these bytes: a reader rewritten for speed
// or memory (as the streaming reader was) must give the
// very bytes the last one gave, or every trace campaign ever run gets a
// new id and its archive no longer reproduces. The sums were taken with
// the reader that built the whole file in memory.
func TestCanonicalPinned(t *testing.T) {
	small, err := os.ReadFile("testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	noheader, err := os.ReadFile("testdata/noheader.swf")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   []byte
		sum  string
	}{
		{"canonicalInput", []byte(canonicalInput), "a692c6803593f8235249a9a33fdfaba7ae9da1e442ae5777316bce359216016e"},
		{"small.swf", small, "0a5ab70780ab8e7268835f9343b6246c4ac1adcead6b24f77e46f77207abd722"},
		{"noheader.swf", noheader, "5a78150b7dc0af0e7ec7151e6a17183f67110cca9e4d320437e0f3104e90f3c1"},
	} {
		got, err := Canonical(bytes.NewReader(c.in), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(got)); sum != c.sum {
			t.Errorf("%s: canonical form's sha256 %s, pinned %s: every trace campaign's id would change", c.name, sum, c.sum)
		}
	}
}

// TestCanonicalExactlySized: the canonical form is returned in a buffer
// of about its size, whatever the doubling that built it left: the
// caller keeps it while it plans and uploads, and a 5·10⁶-job trace's
// 359 MB were held in 537.
func TestCanonicalExactlySized(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "%d %d -1 %d %d\n", i+1, i*3, 1+i%97, 1+i%64)
		if i%1000 == 999 {
			c, err := Canonical(strings.NewReader(b.String()), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if cap(c)-len(c) > len(c)/8 {
				t.Fatalf("%d jobs: a canonical form of %d bytes in a buffer of %d", i+1, len(c), cap(c))
			}
		}
	}
}
