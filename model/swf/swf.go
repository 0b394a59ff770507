// Package swf reads traces in the Standard Workload Format (SWF) of the
// Parallel Workloads Archive, for replaying real arrival streams through the
// simulator.
//
// An SWF file is a sequence of lines. Lines whose first non-blank character is
// ';' are comments; the header comments carry "Key: value" pairs, of which
// MaxProcs and MaxNodes are read. Every other non-blank line is one job with 18
// whitespace-separated numeric fields, -1 meaning "unknown". The simulator
// needs only four of them:
//
//	field 1  job number
//	field 2  submit time (seconds)
//	field 4  run time (seconds)
//	field 5  number of allocated processors (negative, i.e. -1 = unknown:
//	         use field 8, requested processors, if the line has it)
//	field 9  requested time (the user's run-time estimate), kept as
//	         Job.Requested for policies that schedule on estimates
//	         (backfilling); 0 when absent, unknown (-1), not positive or not
//	         a number — it is never a reason to reject a line
//
// Only those fields are parsed (and validated), so traces whose other columns
// are damaged or missing are still usable; a line needs at least 5 fields.
//
// A multiserver job holds its servers for its whole service, so a job is
// usable only if its run time and width are positive and its width fits in the
// k servers of the simulated system. Unusable jobs are dropped and counted per
// reason in [SkipCounts], so that a replay can report how much of the trace it
// ignored instead of silently changing the workload.
package swf

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Job is one usable job of a trace.
type Job struct {
	Number int64   // field 1, as in the file (for tracing a result back to the trace)
	Submit float64 // seconds since the first kept job's submission (>= 0)
	Run    float64 // run time in seconds (> 0)
	Procs  int     // servers held for the whole run (1..k)
	// Requested is field 9, the requested time in seconds (> 0), or 0 if
	// the line does not give a usable one.
	Requested float64
}

// SkipCounts counts the job lines that were dropped, one counter per reason.
// A line is counted under the first reason that applies, in field order.
type SkipCounts struct {
	Submit  int // submit time negative (-1 = unknown): the job cannot be placed in time
	RunTime int // run time <= 0 (-1 = unknown; 0 = cancelled or failed at once)
	Procs   int // processors <= 0 (unknown even after the field-8 fallback)
	TooWide int // processors > k: the job could never be served
}

// servers is the k a trace is read for: k itself, or for k <= 0 the
// header's MaxProcs, else its MaxNodes, else ErrNoServers.
func servers(k, maxProcs, maxNodes int) (int, error) {
	switch {
	case k > 0:
		return k, nil
	case maxProcs > 0:
		return maxProcs, nil
	case maxNodes > 0:
		return maxNodes, nil
	}
	return 0, ErrNoServers
}

// keeps reports whether a system of k servers keeps job j, counting it
// under the first reason that drops it otherwise.
func (s *SkipCounts) keeps(j *Job, k int) bool {
	switch {
	case j.Submit < 0:
		s.Submit++
	case j.Run <= 0:
		s.RunTime++
	case j.Procs <= 0:
		s.Procs++
	case j.Procs > k:
		s.TooWide++
	default:
		return true
	}
	return false
}

// Total returns the number of dropped job lines.
func (s SkipCounts) Total() int { return s.Submit + s.RunTime + s.Procs + s.TooWide }

// Trace is the usable content of an SWF file.
type Trace struct {
	// Jobs sorted by submit time (stable, so ties keep file order), with
	// submit times relative to the first kept job: Jobs[0].Submit == 0.
	Jobs []Job

	// MaxProcs and MaxNodes are the header values (0 if absent).
	MaxProcs, MaxNodes int

	// K is the number of servers the jobs were filtered against.
	K int

	// Origin is the absolute submit time (seconds, file clock) of the first kept
	// job, subtracted from every Submit.
	Origin float64

	// Lines is the number of job lines read (kept + skipped).
	Lines int

	// Skipped counts the dropped job lines by reason.
	Skipped SkipCounts

	// FromRequested counts the kept jobs whose width came from field 8
	// (requested processors) because field 5 was unknown. A replay that relies
	// heavily on requests rather than allocations is worth reporting.
	FromRequested int
}

// ErrNoServers is returned (wrapped) by [Read] when k <= 0 and the header
// gives neither MaxProcs nor MaxNodes.
var ErrNoServers = errors.New("swf: k <= 0 and the header has no positive MaxProcs or MaxNodes")

// ParseError reports a malformed line. Field is 1-based, or 0 when the line as
// a whole is wrong (too few fields, bad header value, too long).
type ParseError struct {
	Line   int    // 1-based line number in the input
	Field  int    // 1-based SWF field number; 0 for the whole line
	Name   string // what the field means, e.g. "run time"
	Value  string // the offending text (shortened if very long)
	Reason string // e.g. "is not a number"
	err    error  // ErrTooLarge for a limit crossed
}

// Unwrap gives ErrTooLarge for a limit crossed.
func (e *ParseError) Unwrap() error { return e.err }

// tooLarge is the error of a limit crossed at line.
func tooLarge(line int, format string, a ...any) *ParseError {
	return &ParseError{Line: line, Reason: fmt.Sprintf(format, a...), err: ErrTooLarge}
}

// canonicalTooLarge is the error of Limits.MaxCanonical crossed at line.
func canonicalTooLarge(line int, bound int64) *ParseError {
	e := tooLarge(line, "the canonical form (the fields a replay reads) is larger than the limit of %d bytes", bound)
	e.err = ErrCanonicalTooLarge
	return e
}

func (e *ParseError) Error() string {
	if e.Field == 0 {
		what := e.Name
		if e.Value != "" {
			what += fmt.Sprintf(" %q", e.Value)
		}
		if what != "" {
			what += " "
		}
		return fmt.Sprintf("swf: line %d: %s%s", e.Line, what, e.Reason)
	}
	return fmt.Sprintf("swf: line %d: field %d (%s): %q %s", e.Line, e.Field, e.Name, e.Value, e.Reason)
}

// maxLine bounds the length of one line, so that a corrupt or binary input
// fails with an error instead of exhausting memory.
const maxLine = 1 << 20

// Limits bound what Read accepts, so that a trace from an untrusted source
// (a farm worker reads traces named by task messages) fails with a clear
// error instead of exhausting memory. The zero value of a field means its
// default.
type Limits struct {
	// MaxLine bounds one line in bytes (default 1 MiB).
	MaxLine int
	// MaxJobs bounds the number of job lines (default DefaultMaxJobs): Read
	// keeps 40 bytes per line until it knows which jobs fit the servers.
	MaxJobs int
	// MaxBytes bounds the (decompressed) input in bytes (default
	// DefaultMaxBytes): a gzip member that inflates beyond it is an error,
	// not a bomb.
	MaxBytes int64
	// MaxComments bounds the comment lines (default DefaultMaxComments):
	// a trace's header is a few dozen, and a file of nothing else was
	// read to its end before it was found to hold no job.
	MaxComments int
	// MaxCanonical bounds Canonical's output in bytes (0: no bound), so
	// that a trace whose canonical form is too large to store is refused
	// at the line that crosses the bound: it was built whole first (a
	// 10⁷-line trace took 5 GB to be refused).
	MaxCanonical int64
}

// Default limits. The largest traces of the Parallel Workloads Archive
// have a few million jobs, a few hundred MB of text uncompressed and a
// header of a few dozen comment lines.
const (
	DefaultMaxJobs     = 20_000_000
	DefaultMaxBytes    = 4 << 30
	DefaultMaxComments = 100_000
)

// ErrTooLarge is what a *ParseError wraps when the input crosses one of
// Limits' bounds (errors.Is tells it from a malformed line).
var ErrTooLarge = errors.New("swf: past a limit")

// ErrCanonicalTooLarge is ErrTooLarge for Limits.MaxCanonical, which the
// caller that sets it says in its own words.
var ErrCanonicalTooLarge = fmt.Errorf("%w: the canonical form", ErrTooLarge)

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = maxLine
	}
	if l.MaxJobs <= 0 {
		l.MaxJobs = DefaultMaxJobs
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxComments <= 0 {
		l.MaxComments = DefaultMaxComments
	}
	return l
}

// errTooBig is what limitReader returns past its limit.
type errTooBig struct{ limit int64 }

func (e errTooBig) Error() string {
	return fmt.Sprintf("input is larger than the limit of %d bytes", e.limit)
}

// limitReader is io.LimitReader that fails, rather than ending quietly,
// past its limit: a truncated trace must never pass for a whole one.
type limitReader struct {
	r    io.Reader
	left int64
	max  int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells an input of exactly the limit from a longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, errTooBig{l.max}
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// Read parses an SWF trace from r for a system of k servers with the
// default Limits (see [ReadLimits]).
func Read(r io.Reader, k int) (*Trace, error) { return ReadLimits(r, k, Limits{}) }

// ReadLimits parses an SWF trace from r for a system of k servers. If k <= 0, the
// header's MaxProcs is used, or MaxNodes when MaxProcs is absent (many archive
// traces give only MaxNodes); [ErrNoServers] if neither is there. An input
// that starts with the gzip magic number is decompressed (the archive
// distributes traces gzipped, and a farm stores them as given).
//
// The error is a *[ParseError] for a malformed line or a limit exceeded;
// ReadLimits never returns a partial trace with an error. A trace in which
// every job was skipped is not an error: Jobs is then empty and Skipped says
// why.
func ReadLimits(r io.Reader, k int, lim Limits) (*Trace, error) {
	// The jobs are kept as Jobs from their line on, in chunks (no
	// slice grown by copying), with a bit for each that says its width
	// came from field 8: k may come from a header line anywhere in the
	// file, so filtering waits until everything is read. Each line was
	// kept parsed (48 bytes) and then copied into Jobs, and the input
	// ahead of it was often held whole by the caller.
	tr := &Trace{}
	var chunks [][]Job
	var fromRequested []uint64
	n := 0
	err := scan(r, lim, tr, func(_ int, p parsed) error {
		if n%jobChunk == 0 {
			chunks = append(chunks, make([]Job, 0, jobChunk))
		}
		c := &chunks[len(chunks)-1]
		*c = append(*c, p.job())
		if n%64 == 0 {
			fromRequested = append(fromRequested, 0)
		}
		if p.fromRequested {
			fromRequested[n/64] |= 1 << (n % 64)
		}
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}

	if k, err = servers(k, tr.MaxProcs, tr.MaxNodes); err != nil {
		return nil, err
	}
	tr.K = k
	tr.Lines = n
	usable := func(j *Job) bool { return j.Submit >= 0 && j.Run > 0 && j.Procs > 0 && j.Procs <= k }
	kept := 0
	for _, c := range chunks {
		for i := range c {
			if usable(&c[i]) {
				kept++
			}
		}
	}
	// Exactly the kept jobs: a trace is kept (a worker caches it for all
	// its replications), and a slice grown by appending held up to a
	// quarter more.
	if kept > 0 {
		tr.Jobs = make([]Job, 0, kept)
	}
	i := 0
	for ci, c := range chunks {
		for _, j := range c {
			if tr.Skipped.keeps(&j, k) {
				tr.Jobs = append(tr.Jobs, j)
				if fromRequested[i/64]&(1<<(i%64)) != 0 {
					tr.FromRequested++
				}
			}
			i++
		}
		chunks[ci] = nil // read: the collector may have it
	}

	tr.order()
	return tr, nil
}

// order sorts the kept jobs stably by submit time and makes their submit
// times relative to the first one's, Origin.
func (tr *Trace) order() {
	slices.SortStableFunc(tr.Jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
	if len(tr.Jobs) > 0 {
		tr.Origin = tr.Jobs[0].Submit
		for i := range tr.Jobs {
			tr.Jobs[i].Submit -= tr.Origin
		}
	}
}

// EachKept calls fn, in the input's order, with each job that ReadLimits
// of the same input keeps for a system of k servers (k > 0: the header's
// servers are resolved by the caller, Shape.At, since a header line may
// follow the jobs), and stops at fn's first error, which it returns. A
// job is as ReadLimits gives it but for its submit time, which is the
// file's: ReadLimits' Jobs are these, sorted stably by submit time, each
// less the first one's (Trace.Origin). Nothing is kept of a line once fn
// returns, so a caller that converts the jobs as they come (a sweep
// trying its policies on a trace) never holds the parsed trace.
func EachKept(r io.Reader, k int, lim Limits, fn func(Job) error) error {
	if k <= 0 {
		return fmt.Errorf("swf: EachKept needs k > 0 servers, got %d", k)
	}
	var skip SkipCounts
	return scan(r, lim, &Trace{}, func(_ int, p parsed) error {
		if j := p.job(); skip.keeps(&j, k) {
			return fn(j)
		}
		return nil
	})
}

// job is the Job of line p before it is filtered, its submit time the
// file's.
func (p *parsed) job() Job {
	return Job{Number: p.number, Submit: p.submit, Run: p.run, Procs: clampProcs(p.procs), Requested: p.requested}
}

// jobChunk is how many jobs ReadLimits gathers per allocation (160 kB).
const jobChunk = 1 << 12

// clampProcs is an integral processor count as an int: one past the
// range of int is wider than any system (math.MaxInt; only k =
// math.MaxInt would keep it).
func clampProcs(p float64) int {
	switch {
	case p >= math.MaxInt64:
		return math.MaxInt
	case p <= math.MinInt64:
		return math.MinInt
	}
	return int(p)
}

// scan reads an SWF input within lim, line by line: the header values
// into tr, and each job line, parsed, to job (whose error stops the
// read). Nothing of a line outlives job: the line is read into the
// scanner's buffer, split into slices of it, and parsed there.
func scan(r io.Reader, lim Limits, tr *Trace, job func(line int, p parsed) error) error {
	lim = lim.withDefaults()
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("swf: gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	r = &limitReader{r: r, left: lim.MaxBytes, max: lim.MaxBytes}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64*1024, lim.MaxLine)), lim.MaxLine)
	line, jobs, comments := 0, 0, 0
	var fields [][]byte // reused: a 10^6-job trace split 10^6 times
	for sc.Scan() {
		line++
		s := sc.Bytes()
		if line == 1 {
			// A byte order mark (an editor on Windows writes one) made
			// the header's first line a job line of 3 fields.
			s = bytes.TrimPrefix(s, []byte("\ufeff"))
		}
		s = bytes.TrimSpace(s)
		if len(s) == 0 {
			continue
		}
		if s[0] == ';' {
			if comments++; comments > lim.MaxComments {
				return tooLarge(line, "more than %d comment lines (the comment limit; a trace's header has a few dozen)", lim.MaxComments)
			}
			if err := tr.header(line, s[1:]); err != nil {
				return err
			}
			continue
		}
		if jobs >= lim.MaxJobs {
			return tooLarge(line, "more than %d job lines (the job limit)", lim.MaxJobs)
		}
		jobs++
		fields = splitFields(fields[:0], s)
		p, err := parseJob(line, fields)
		if err != nil {
			return err
		}
		if err := job(line, p); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return tooLarge(line+1, "line longer than %d bytes", lim.MaxLine)
		}
		if tb, ok := errors.AsType[errTooBig](err); ok {
			return tooLarge(line+1, "%s", tb.Error())
		}
		return fmt.Errorf("swf: reading line %d: %w", line+1, err)
	}
	return nil
}

// ReadFile reads the SWF trace at path (see [Read]), gzipped or not (the
// content is sniffed, whatever the name). It is for a trace on the caller's
// own disk (msjfarm simulate --swf); a farm never opens a path it was sent.
func ReadFile(path string, k int) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("swf: %w", err)
	}
	defer f.Close()
	tr, err := Read(f, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// header records MaxProcs / MaxNodes from a comment line (without the ';').
// Other comments are ignored. Only the value's first word is read (and
// only then is any of the line copied): a header line of 10⁵ words was
// split whole.
func (tr *Trace) header(line int, s []byte) error {
	k, val, ok := bytes.Cut(s, []byte(":"))
	if !ok {
		return nil
	}
	k = bytes.TrimSpace(k)
	var dst *int
	switch {
	case bytes.EqualFold(k, []byte("MaxProcs")):
		dst = &tr.MaxProcs
	case bytes.EqualFold(k, []byte("MaxNodes")):
		dst = &tr.MaxNodes
	default:
		return nil
	}
	key := string(k)
	val = bytes.TrimLeftFunc(val, unicode.IsSpace)
	if i := bytes.IndexFunc(val, unicode.IsSpace); i >= 0 {
		val = val[:i]
	}
	if len(val) == 0 {
		return &ParseError{Line: line, Name: "header " + key, Reason: "has no value"}
	}
	n, err := strconv.Atoi(string(val))
	if err != nil {
		return &ParseError{Line: line, Name: "header " + key, Value: short(val), Reason: "is not an integer"}
	}
	*dst = n
	return nil
}

// parsed is one job line before filtering.
type parsed struct {
	number             int64
	submit, run, procs float64 // procs is integral
	requested          float64 // field 9 if usable, else 0
	fromRequested      bool    // procs came from field 8
}

// parseJob parses the used fields of one job line.
func parseJob(line int, f [][]byte) (parsed, error) {
	var p parsed
	if len(f) < 5 {
		return p, &ParseError{Line: line, Reason: fmt.Sprintf("%d fields, need at least 5 (of 18)", len(f))}
	}
	num, err := field(line, f, 1, "job number", true)
	if err != nil {
		return p, err
	}
	// The float64 range check keeps the conversion defined: 2^63 is exact.
	if num < -(1<<63) || num >= 1<<63 {
		return p, &ParseError{Line: line, Field: 1, Name: "job number", Value: short(f[0]), Reason: "is out of range"}
	}
	p.number = int64(num)
	if p.submit, err = timeField(line, f, 2, "submit time"); err != nil {
		return p, err
	}
	if p.run, err = timeField(line, f, 4, "run time"); err != nil {
		return p, err
	}
	if p.procs, err = field(line, f, 5, "allocated processors", true); err != nil {
		return p, err
	}
	if p.procs < 0 && len(f) >= 8 {
		if p.procs, err = field(line, f, 8, "requested processors", true); err != nil {
			return p, err
		}
		p.fromRequested = true
	}
	if len(f) >= 9 {
		if r, err := strconv.ParseFloat(string(f[8]), 64); err == nil && r > 0 && !math.IsInf(r, 0) {
			p.requested = r
		}
	}
	return p, nil
}

// splitFields appends the fields of s, as bytes.Fields splits them, to
// dst: into a slice the caller reuses, where bytes.Fields allocates one
// per line (a third of the bytes a large trace's parse allocated). Only
// the first maxFields are split (parseJob reads nine; a line of 10⁵
// fields was split whole, and the rest tells nothing). A line with a
// byte outside ASCII goes to bytes.Fields, for its Unicode spaces.
func splitFields(dst [][]byte, s []byte) [][]byte {
	n, start := len(dst), -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			f := bytes.Fields(s)
			return append(dst[:n], f[:min(len(f), maxFields)]...)
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' {
			if start >= 0 {
				if dst = append(dst, s[start:i]); len(dst)-n == maxFields {
					return dst
				}
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

// maxFields is how many of a job line's fields are split: the 18 of SWF.
const maxFields = 18

// field parses field i (1-based) of f, naming it in errors. SWF columns are
// integers by definition, but some archive traces write times with decimals,
// so only counts (integer == true) must be integral.
func field(line int, f [][]byte, i int, name string, integer bool) (float64, error) {
	s := f[i-1]
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, &ParseError{Line: line, Field: i, Name: name, Value: short(s), Reason: "is out of range"}
		}
		return 0, &ParseError{Line: line, Field: i, Name: name, Value: short(s), Reason: "is not a number"}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &ParseError{Line: line, Field: i, Name: name, Value: short(s), Reason: "is not a finite number"}
	}
	if integer && v != math.Trunc(v) {
		return 0, &ParseError{Line: line, Field: i, Name: name, Value: short(s), Reason: "is not an integer"}
	}
	return v, nil
}

// MaxTime bounds a trace's times in seconds (10^12 s, 31,700 years; the
// archive's longest traces span a few years): a run time of 1e300 was
// accepted and the replication's offered load came out 6·10^283, which the
// result check then blamed on the plugin that computed it.
const MaxTime = 1e12

// timeField is field for a time in seconds, at most MaxTime in magnitude.
func timeField(line int, f [][]byte, i int, name string) (float64, error) {
	v, err := field(line, f, i, name, false)
	if err == nil && math.Abs(v) > MaxTime {
		return 0, &ParseError{Line: line, Field: i, Name: name, Value: short(f[i-1]), Reason: "is more than 10^12 seconds (31,700 years) in magnitude"}
	}
	return v, err
}

// short keeps error messages readable when a field is garbage.
func short(s []byte) string {
	const n = 40
	if len(s) <= n {
		return string(s)
	}
	return string(s[:n]) + "..."
}

// ValidSHA256 reports whether s is the form a trace's content hash takes in
// sweep files, tasks and storage keys: 64 lowercase hex digits.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
