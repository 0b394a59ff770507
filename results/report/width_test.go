package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
)

// TestFigureWidths: every figure of a report of a workload of 1, 2 or 3
// classes is drawn a column's width (3.3 in: a single plot or panel) or a
// page's (6.9 in: two or three panels across), the widths at which its
// text is at print size in a two-column paper. A per-class figure of two
// classes (one-or-all) was 4.6 in wide, and of one class 2.3 in.
func TestFigureWidths(t *testing.T) {
	svgSize := regexp.MustCompile(`<svg width="([0-9.]+)pt"`)
	for classes := 1; classes <= 3; classes++ {
		spec := workload.Spec{Name: fmt.Sprintf("w%d", classes), Servers: 4}
		for c := 0; c < classes; c++ {
			spec.Classes = append(spec.Classes, workload.ClassSpec{Name: fmt.Sprintf("c%d", c), Need: 1 + c, Share: 1, Service: workload.Exp(1)})
		}
		files, err := Render(simulateSpec(t, spec, []policyRun{fcfsRun()}, []float64{0.2, 0.4}, 2, 500))
		if err != nil {
			t.Fatal(err)
		}
		perClass := 0
		for name, b := range files {
			if !strings.HasSuffix(name, ".svg") {
				continue
			}
			m := svgSize.FindSubmatch(b)
			if m == nil {
				t.Fatalf("%s: no width", name)
			}
			w, _ := strconv.ParseFloat(string(m[1]), 64)
			if w != 3.3*72 && w != 6.9*72 {
				t.Errorf("%d classes: %s is %.4g in wide, want 3.3 (a column) or 6.9 (a page)", classes, name, w/72)
			}
			if strings.HasPrefix(name, "class_") {
				perClass++
				if want := map[bool]float64{true: 3.3, false: 6.9}[classes == 1]; w != want*72 {
					t.Errorf("%d classes: %s is %.4g in wide, want %.2g", classes, name, w/72, want)
				}
			}
		}
		if perClass == 0 {
			t.Errorf("%d classes: no per-class figure", classes)
		}
	}
}
