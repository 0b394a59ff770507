package sweep

import (
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/swf"
)

// TestForFarmDropsTheTraceRead: the File the farm is given holds nothing
// of the trace read on this machine, neither its canonical bytes nor
// their shape, while the File planned here keeps both.
func TestForFarmDropsTheTraceRead(t *testing.T) {
	sh, err := swf.ShapeOf(strings.NewReader("; MaxProcs: 4\n1 0 -1 10 2\n"), swf.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := &File{Name: "tr", Trace: &TraceSpec{SHA256: strings.Repeat("a", 64), Size: 1, local: []byte("x"), shape: sh}}
	g := f.ForFarm()
	if g.Trace.local != nil || g.Trace.shape != nil {
		t.Errorf("the farm's File keeps the trace read here: %d bytes, shape %v", len(g.Trace.local), g.Trace.shape)
	}
	if g.Trace.SHA256 != f.Trace.SHA256 || g.Trace.Size != 1 {
		t.Errorf("the farm's File lost the trace's pin: %+v", g.Trace)
	}
	if f.Trace.local == nil || f.Trace.shape != sh {
		t.Error("ForFarm changed the File planned here")
	}
}
