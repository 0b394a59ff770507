package aggregate

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestStreamedEqualsSummarize: summarising a point at a time
// (SummarizePoint) and pairing a scenario at a time (ComparePaired, whose
// loader is asked only for one scenario's points per call) gives the
// summary Summarize and Compare give with every record in memory, paired
// comparisons and Holm's correction included. Two scenarios (λ = 2, 4) ×
// two policies (fcfs the baseline, msfq) × four replications, one failed,
// with results that differ by replication so that the pairs matter.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestStreamedEqualsSummarize(t *testing.T) {
	var tasks []sweep.Task
	recs := map[string]*record.Record{}
	for _, rate := range []float64{2, 4} {
		for pi, pol := range []string{"fcfs", "msfq"} {
			pt := fmt.Sprintf("%s-%g", pol, rate)
			for r := range 4 {
				tk := task(pt, r, pol, map[string]any{}, map[string]any{"arrival_rate": rate}, rate)
				tk.Scenario = fmt.Sprintf("sc-%g", rate)
				tasks = append(tasks, tk)
				if pi == 1 && r == 3 {
					recs[tk.ID] = &record.Record{Task: tk, Error: "killed"}
					continue
				}
				x := rate + float64(r) + 0.3*float64(pi)*float64(r+1)
				recs[tk.ID] = &record.Record{Task: tk, Result: res(x, x/2, 2*x)}
			}
		}
	}
	want := Summarize(tasks, recs)
	if err := Compare(want, "fcfs"); err != nil {
		t.Fatal(err)
	}
	byPoint := map[string][]sweep.Task{}
	var order []string
	for _, tk := range tasks {
		if byPoint[tk.Point] == nil {
			order = append(order, tk.Point)
		}
		byPoint[tk.Point] = append(byPoint[tk.Point], tk)
	}
	var got []Point
	for _, p := range order {
		got = append(got, SummarizePoint(byPoint[p], recs))
	}
	calls := 0
	err := ComparePaired(got, "fcfs", func(idx []int) (map[int][]*record.Record, error) {
		calls++
		out := map[int][]*record.Record{}
		for _, i := range idx {
			if got[i].Scenario != got[idx[0]].Scenario {
				t.Errorf("loader asked for points of two scenarios: %v", idx)
			}
			for _, tk := range byPoint[got[i].Point] {
				out[i] = append(out[i], recs[tk.ID])
			}
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("loader called %d times, want once per scenario (2)", calls)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, want); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("streamed summary differs:\n%s\nSummarize:\n%s", b.Bytes(), a.Bytes())
	}
	if c := got[1].Compare; c == nil || len(c.Metrics) == 0 || c.Metrics[0].N != 3 {
		t.Fatalf("msfq at λ=2 compared %+v, want 3 pairs (one replication failed)", c)
	}
	if _, err := BaselineLabel(got, "nope"); err == nil {
		t.Fatal("an unknown baseline resolved")
	}
}
