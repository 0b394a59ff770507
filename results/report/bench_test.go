package report

import (
	"testing"
)

// BenchmarkRender renders the report of FCFS on one-or-all at 9 arrival
// rates (3 replications each): 12 figures, SVG and PNG. A campaign's
// finalisation waits for this, so it counts in a short campaign's wall
// time (e2e's TestRunOverhead).
//
//	go test -run '^$' -bench Render -benchtime 10x ./report
func BenchmarkRender(b *testing.B) {
	pts := simulate(b, []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 5}, 3, 2000)
	b.ResetTimer()
	for b.Loop() {
		files, err := Render(Campaign{Points: pts})
		if err != nil {
			b.Fatal(err)
		}
		if len(files) < 20 {
			b.Fatalf("%d files", len(files))
		}
	}
}
