package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderToDirSink: a report rendered into a directory a file at a time
// (Write, RenderTo with a DirSink) is the in-memory one (Render) byte for
// byte, file for file. FCFS at three loads, 2 replications of 5000
// arrivals (seeds 1, 2).
func TestRenderToDirSink(t *testing.T) {
	pts := simulate(t, []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5}, 2, 5000)
	c := Campaign{Points: pts, Manifest: []byte(`{"campaign":"sink"}`)}
	want, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, c); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Errorf("%d files written, Render has %d", len(ents), len(want))
	}
	for n, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes written (%v), Render's %d differ", n, len(got), err, len(data))
		}
	}
}

// failSink fails on the file named bad.
type failSink struct {
	Files
	bad string
}

func (f failSink) Put(name string, data []byte) error {
	if name == f.bad {
		return errors.New("no space left on device")
	}
	return f.Files.Put(name, data)
}

// TestRenderToSinkError: a sink's failure is RenderTo's error, naming the
// file and the cause, and no file is handed over after it.
func TestRenderToSinkError(t *testing.T) {
	pts := simulate(t, []policyRun{fcfsRun()}, []float64{0.5, 1}, 2, 5000)
	s := failSink{Files: Files{}, bad: "summary.csv"}
	err := RenderTo(s, Campaign{Points: pts})
	if err == nil || !strings.Contains(err.Error(), "summary.csv") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("error %v, want one naming summary.csv and the cause", err)
	}
	if strings.Count(err.Error(), "summary.csv") != 1 {
		t.Errorf("error %q names the file more than once", err)
	}
	if _, ok := s.Files["index.html"]; ok {
		t.Errorf("index.html was handed to the sink after its failure")
	}
}
