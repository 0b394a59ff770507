// Package golden compares a test's output with a golden file: byte for
// byte on the architecture the files were recorded on, number by number
// elsewhere.
//
// Why two rules. A run is bit-for-bit reproducible on one architecture,
// not across them: Go fuses x*y+z into one instruction on arm64 (one
// rounding instead of two), and amd64's math.Exp and math.Log are
// assembly of their own. Under qemu-aarch64 the engine's golden run
// differed in 73 numbers, by at most 7·10⁻¹⁴ relative, every count
// equal. Off Arch a file must therefore keep its shape, its strings and
// its counts, and its numbers to Tol relative: a bug moves them further.
package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Arch is the architecture the golden files were recorded on.
const Arch = "amd64"

// Tol is the relative difference allowed between a number and its
// golden off Arch.
const Tol = 1e-9

// Check fails t unless got matches want, the golden file path: byte for
// byte on Arch; elsewhere by same (JSON or Text), which returns how many
// numbers differ in their last bits and the first difference beyond Tol.
// A failure on Arch names the first line that differs; elsewhere, same's
// error names the number.
func Check(t testing.TB, path string, want, got []byte, same func(want, got []byte) (int, error)) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	if runtime.GOARCH != Arch {
		if n, err := same(want, got); err != nil {
			t.Errorf("%s was recorded on %s; on %s it differs beyond %g: %v", path, Arch, runtime.GOARCH, Tol, err)
		} else {
			t.Logf("%s: %d numbers differ from %s's in their last bits (%s), within %g", path, n, Arch, runtime.GOARCH, Tol)
		}
		return
	}
	i, g, w := firstDiff(want, got)
	t.Errorf("%s differs at line %d (-update rewrites it):\n got: %s\nwant: %s", path, i, g, w)
}

// firstDiff returns the first line (from 1) where got and want differ,
// and its two texts.
func firstDiff(want, got []byte) (int, string, string) {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w || i >= len(gl) || i >= len(wl) {
			return i + 1, g, w
		}
	}
	return 0, "", ""
}

// number is a decimal number as strconv.FormatFloat and encoding/json
// write one (inf and NaN are words, compared as text).
var number = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)

// near reports whether a and b, written as numbers, are within Tol of
// each other relative to the larger.
func near(a, b string) bool {
	x, errX := strconv.ParseFloat(a, 64)
	y, errY := strconv.ParseFloat(b, 64)
	return errX == nil && errY == nil && math.Abs(x-y) <= Tol*math.Max(math.Abs(x), math.Abs(y))
}

// JSON compares two JSON documents: the same shape and strings, numbers
// near each other.
func JSON(want, got []byte) (int, error) {
	decode := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v)
	}
	w, err := decode(want)
	if err != nil {
		return 0, err
	}
	g, err := decode(got)
	if err != nil {
		return 0, err
	}
	differ := 0
	var walk func(path string, w, g any) error
	walk = func(path string, w, g any) error {
		switch w := w.(type) {
		case map[string]any:
			g, ok := g.(map[string]any)
			if !ok || len(g) != len(w) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			for k, v := range w {
				if err := walk(path+"."+k, v, g[k]); err != nil {
					return err
				}
			}
		case []any:
			g, ok := g.([]any)
			if !ok || len(g) != len(w) {
				return fmt.Errorf("%s: %v, want %d elements", path, g, len(w))
			}
			for i := range w {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
					return err
				}
			}
		case json.Number:
			g, ok := g.(json.Number)
			if !ok || g != w && !near(string(w), string(g)) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			if g != w {
				differ++
			}
		default:
			if g != w {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
		}
		return nil
	}
	return differ, walk("", w, g)
}

// Text compares two texts (CSV, a report's digest) line by line: the same
// text around the numbers, and numbers near each other.
func Text(want, got []byte) (int, error) {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	if len(gl) != len(wl) {
		return 0, fmt.Errorf("%d lines, want %d", len(gl), len(wl))
	}
	differ := 0
	for i := range wl {
		if gl[i] == wl[i] {
			continue
		}
		gn, wn := number.FindAllString(gl[i], -1), number.FindAllString(wl[i], -1)
		ok := len(gn) == len(wn) && number.ReplaceAllString(gl[i], "#") == number.ReplaceAllString(wl[i], "#")
		for j := 0; ok && j < len(wn); j++ {
			if gn[j] != wn[j] {
				ok = near(wn[j], gn[j])
				differ++
			}
		}
		if !ok {
			return differ, fmt.Errorf("line %d: %s, want %s", i+1, gl[i], wl[i])
		}
	}
	return differ, nil
}
