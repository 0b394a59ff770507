package swf

import (
	"bytes"
	"io"
	"strconv"
)

// Canonical parses an SWF input (gzipped or not, within lim) and writes
// back only what a replay reads: the MaxProcs and MaxNodes header lines
// and, for every job line, the fields Read uses — job number (1), submit
// time (2), run time (4), processors (5, or 8 when field 5 was unknown),
// requested time (9) — with -1 in the other fields of the 18. Comments,
// unused columns and anything else in the file are dropped.
//
// Reading the result gives exactly the trace the input gives, for every k
// (the same jobs, skip counts, FromRequested and header values): a job
// line that Read skips is kept, so a replay still reports it. It is a
// fixed point (Canonical of its own output is the same bytes) and is plain
// text whatever the input was, so its sha256 depends only on the parsed
// content, never on a gzip library's output.
//
// The submitting client uploads this form instead of the file it read, so
// that what reaches shared storage is, provably, a trace: a file that
// does not parse as SWF (a secrets file named by mistake or by malice) is
// refused before anything is uploaded.
func Canonical(r io.Reader, lim Limits) ([]byte, error) {
	tr, jobs, err := scan(r, lim)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("; msjfarm canonical SWF: the fields a replay reads, -1 elsewhere\n")
	if tr.MaxProcs != 0 {
		b.WriteString("; MaxProcs: " + strconv.Itoa(tr.MaxProcs) + "\n")
	}
	if tr.MaxNodes != 0 {
		b.WriteString("; MaxNodes: " + strconv.Itoa(tr.MaxNodes) + "\n")
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for _, p := range jobs {
		f := [18]string{}
		for i := range f {
			f[i] = "-1"
		}
		f[0] = strconv.FormatInt(p.number, 10)
		f[1] = num(p.submit)
		f[3] = num(p.run)
		if p.fromRequested {
			f[7] = num(p.procs)
		} else {
			f[4] = num(p.procs)
		}
		if p.requested > 0 {
			f[8] = num(p.requested)
		}
		for i, x := range f {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(x)
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
