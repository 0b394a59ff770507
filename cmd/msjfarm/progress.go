package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/cwriter"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sweep"
)

// sigDigits is the precision of every number in the terminal table: one
// format for estimates, half-widths and axis values alike, so that a
// column never mixes 4670.1 with 4.2e+02.
const sigDigits = 4

// num prints a numeric cell with sigDigits significant digits in
// positional notation (trailing zeros after the point dropped), and in
// scientific notation only outside [1e-4, 1e15) where positional would be
// unreadable; a cell that is not a number (empty, NaN written as text) is
// printed as it is.
func num(s string) string {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return sig(x, sigDigits)
}

func sig(x float64, digits int) string {
	if math.IsInf(x, 0) {
		return aggregate.FormatInf(x) // "∞" as index.html writes it, not "+Inf"
	}
	if x == 0 || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	e := int(math.Floor(math.Log10(math.Abs(x))))
	if e < -4 || e >= 15 {
		return strconv.FormatFloat(x, 'e', digits-1, 64)
	}
	// Round to digits significant digits first: 4670.1 → 4670, 123456 →
	// 123500.
	if scale := e - (digits - 1); scale > 0 {
		p := math.Pow(10, float64(scale))
		x = math.Round(x/p) * p
	}
	out := strconv.FormatFloat(x, 'f', max(0, digits-1-e), 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

// progress shows a campaign's progress on w: a bar with counts, rate, ETA
// and failures (mpb) when w is a terminal, otherwise (tests, CI logs,
// batch jobs) a plain line every plainEvery when something changed.
type progress struct {
	w     io.Writer
	start time.Time
	base  int // finished before this run: left out of the rate and ETA
	tty   bool
	camp  *sweep.Campaign // names failed tasks (describe); nil: by id
	// quiet (run -q) drops the progress line and bar, not the notes of
	// why a campaign does not move: with -q, a store on a full disk was
	// a run that waited without a word.
	quiet bool

	// smu guards last, which the bar's decorator reads from mpb's render
	// goroutine; mu guards the rest. They are separate because the bar's
	// methods wait for that goroutine, which may be waiting for smu.
	smu       sync.Mutex
	last      protocol.Status
	mu        sync.Mutex
	bars      *mpb.Progress
	bar       *mpb.Bar
	lastPrint time.Time
	lastLine  string
	// lastFinal is the finalisation failure last shown (Status.Finalising).
	lastFinal string
	// lastRec is the reconcile failure last shown (Status.Reconciling).
	lastRec string
	// noted are the lines printed once each so far (notes: paused
	// workers, refused and malformed task messages), at most maxNotes;
	// unshown are the lines of the last status not printed for that
	// bound, so that one listed at poll after poll is counted once in
	// more, which finish reports.
	noted   map[string]bool
	unshown map[string]bool
	more    int
}

// maxNotes bounds the lines a progress prints once each (notes): anyone
// holding the farm's NATS credentials may publish 10^5 task messages that
// do not decode, of which each status lists ten, other ones from poll to
// poll as the coordinator keeps the latest. Printed all, they flooded the
// terminal, and the lines remembered to print each once grew with them.
// Past the bound the lines are counted, and finish says how many once.
const maxNotes = 100

// plainEvery is the interval of the plain progress lines: often enough to
// see a run move in a log, rarely enough not to flood it.
const plainEvery = 5 * time.Second

func newProgress(w io.Writer, base int) *progress {
	// A terminal whose size cannot be read (a pty without a window size,
	// as under script or some CI runners) gets the plain lines: mpb would
	// silently draw nothing there.
	tty := false
	if _, ok := w.(*os.File); ok {
		if cw := cwriter.New(w); cw.IsTerminal() {
			width, _, err := cw.GetTermSize()
			tty = err == nil && width > 0
		}
	}
	return &progress{w: w, start: time.Now(), base: base, tty: tty}
}

// describe lets finish name failed tasks by policy, parameters and axis
// values instead of their hash. Nothing is generated until then: finish
// walks the campaign's tasks once (sweep.Campaign.Each, one scenario at a
// time) and keeps only the failed ones, so the progress view holds O(1)
// while it runs whatever the campaign's size. Holding every task instead
// (a map of ~1 KB each) was most of submit --wait's 449–495 MiB at 10^5
// tasks.
func (p *progress) describe(c *sweep.Campaign) *progress {
	p.camp = c
	return p
}

// failedTasks returns the tasks of p's campaign named by errs (coordinator
// error lines "<task>: <error>"), found in one walk of its tasks; none
// when the campaign is not known or has more than waitDescribeTasks tasks
// (the walk is CPU, a few seconds per 10^5 tasks: a larger campaign's
// failures are named by id).
func (p *progress) failedTasks(errs []string) map[string]*sweep.Task {
	if p.camp == nil || len(errs) == 0 || p.camp.Len() > waitDescribeTasks {
		return nil
	}
	want := make(map[string]*sweep.Task, len(errs))
	for _, e := range errs {
		if id, _, ok := strings.Cut(e, ": "); ok {
			want[id] = nil
		}
	}
	found := 0
	stop := errors.New("all found")
	err := p.camp.Each(func(t sweep.Task) error {
		if v, ok := want[t.ID]; ok && v == nil {
			want[t.ID] = &t
			if found++; found == len(want) {
				return stop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		// The campaign was planned without error before it was submitted:
		// a failure to generate it again only loses the names.
		fmt.Fprintf(p.w, "msjfarm: naming the failed tasks: %v\n", err)
	}
	return want
}

// rate and eta of the tasks finished in this run (monitor.RunRate: the
// live page computes them the same way).
func (p *progress) rateETA(s *protocol.Status) (rate float64, eta string) {
	fin := s.Done + s.Failed
	rate, sec := monitor.RunRate(fin-p.base, time.Since(p.start), s.Total-fin)
	eta = "?"
	if sec >= 0 {
		eta = time.Duration(sec * float64(time.Second)).Round(time.Second).String()
	}
	if fin >= s.Total {
		eta = "0s"
	}
	return rate, eta
}

func (p *progress) line(s *protocol.Status) string {
	fin := s.Done + s.Failed
	pct := 0.0
	if s.Total > 0 {
		pct = 100 * float64(fin) / float64(s.Total)
	}
	rate, eta := p.rateETA(s)
	return fmt.Sprintf("%d/%d done (%.0f%%), %d failed, %d running, %s tasks/s, elapsed %s, ETA %s",
		fin, s.Total, pct, s.Failed, s.Running, sig(rate, 3), time.Since(p.start).Round(time.Second), eta)
}

// note prints a line about campaign id above the bar (through mpb, which
// keeps the bar below it), or in the plain output; the caller holds p.mu.
func (p *progress) note(id, msg string) {
	var w io.Writer = p.w
	if p.bars != nil {
		w = p.bars
	}
	fmt.Fprintf(w, "msjfarm: campaign %s: %s\n", id, msg)
}

func (p *progress) update(s *protocol.Status) {
	p.smu.Lock()
	p.last = *s
	p.smu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.Finalising != "" && s.Finalising != p.lastFinal {
		// Shown once each time it changes, above the bar: every task is
		// finished, and the line alone read "ETA 0s" for ever.
		p.note(s.Campaign, s.Finalising)
	}
	p.lastFinal = s.Finalising
	if s.Reconciling != "" && s.Reconciling != p.lastRec {
		// Tasks that cannot be published: the line read "0 running, ETA
		// ?" for ever, the cause only in the coordinator's log.
		p.note(s.Campaign, s.Reconciling)
	}
	p.lastRec = s.Reconciling
	p.notes(s)
	if p.quiet {
		return
	}
	if !p.tty {
		l := p.line(s)
		if l != p.lastLine && time.Since(p.lastPrint) >= plainEvery {
			fmt.Fprintln(p.w, l)
			p.lastPrint, p.lastLine = time.Now(), l
		}
		return
	}
	if p.bar == nil {
		if s.Total == 0 {
			return
		}
		p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(32), mpb.WithRefreshRate(200*time.Millisecond))
		p.bar = p.bars.AddBar(int64(s.Total),
			mpb.PrependDecorators(decor.CountersNoUnit("%d/%d"), decor.Percentage(decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				p.smu.Lock()
				defer p.smu.Unlock()
				rate, eta := p.rateETA(&p.last)
				return fmt.Sprintf("%s tasks/s  ETA %s  %d running  %d failed", sig(rate, 3), eta, p.last.Running, p.last.Failed)
			})))
	}
	p.bar.SetTotal(int64(s.Total), false)
	p.bar.SetCurrent(int64(s.Done + s.Failed))
}

// notes prints, once each and above the bar, the lines of s that say
// why its campaign does not move or who sends the farm bad work: paused
// workers, task messages refused by workers, and task messages or
// verification requests that do not decode (Status.Malformed). A worker
// of another msjfarm version refuses every task, and the line read "0
// failed, 0 running, ETA ?" for ever, the cause only in status --json; a
// farm whose store is down read "0 running, ETA 5s" for minutes; garbage
// published onto the campaign's subjects was in status alone. Past
// maxNotes lines they are counted (more), not printed. The caller holds
// p.mu.
func (p *progress) notes(s *protocol.Status) {
	var unshown map[string]bool
	for _, lines := range [][]string{s.Paused, s.Rejected, s.Malformed} {
		for _, l := range lines {
			switch {
			case p.noted[l]:
			case len(p.noted) < maxNotes:
				if p.noted == nil {
					p.noted = map[string]bool{}
				}
				p.noted[l] = true
				p.note(s.Campaign, l)
			default:
				if !p.unshown[l] && !unshown[l] {
					p.more++
				}
				if unshown == nil {
					unshown = map[string]bool{}
				}
				unshown[l] = true
			}
		}
	}
	p.unshown = unshown
}

// finish ends the bar and prints the notes' count past maxNotes, the
// final line and the failed tasks.
func (p *progress) finish(s *protocol.Status) {
	p.smu.Lock()
	p.last = *s
	p.smu.Unlock()
	p.mu.Lock()
	p.notes(s) // what the last status adds (run's last is finish's only)
	bars, bar := p.bars, p.bar
	more := p.more
	p.more = 0 // said once
	p.mu.Unlock()
	if bar != nil {
		// Complete the bar at its current count, and remove it: the final
		// line below says the same in words.
		bar.Abort(true)
		bars.Wait()
	}
	if more > 0 {
		fmt.Fprintf(p.w, "msjfarm: campaign %s: … and %d more such lines not shown (`msjfarm status %s` lists those the coordinator keeps)\n", s.Campaign, more, s.Campaign)
	}
	fmt.Fprintf(p.w, "%s — campaign %s %s in %s\n", p.line(s), s.Campaign, s.State, time.Since(p.start).Round(time.Millisecond))
	tasks := p.failedTasks(s.Errors)
	for _, e := range s.Errors {
		fmt.Fprintf(p.w, "  failed: %s\n", failedLine(tasks, e))
	}
	printVerify(p.w, s)
}

// failedLine describes a coordinator error line "<task>: <error>" with
// the task's policy, parameters, axis values and replication when the task
// is in tasks.
func failedLine(tasks map[string]*sweep.Task, e string) string {
	id, msg, ok := strings.Cut(e, ": ")
	t := tasks[id]
	if !ok || t == nil {
		return e
	}
	return taskLabel(t) + ": " + msg + " (task " + id + ")"
}

// taskLabel is "policy k=v ... axis=v ... rep r" of a task.
func taskLabel(t *sweep.Task) string {
	parts := []string{t.Policy}
	parts = append(parts, kv(t.Params)...)
	axes := map[string]any{}
	for k, v := range t.Axes {
		if _, isParam := t.Params[k]; !isParam {
			axes[k] = v
		}
	}
	if _, ok := axes["arrival_rate"]; !ok && t.ArrivalRate != 0 {
		axes["λ"] = t.ArrivalRate
	}
	parts = append(parts, kv(axes)...)
	return strings.Join(parts, " ") + " rep " + strconv.Itoa(t.Replication)
}

func kv(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		v := fmt.Sprint(m[k])
		if f, ok := m[k].(float64); ok {
			v = sig(f, 6)
		}
		out[i] = k + "=" + v
	}
	return out
}
