package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

// MaxFileSize is the default bound on a sweep file that Load reads
// (submit's --max-spec-size sets its own, LoadProfileLimit): a sweep names
// its axes, not its points, so a file near it is a generated list of
// values (10⁶ loads are 9 MB) or a mistake, refused before it is read.
// Parse has no size limit: its content was read by a caller that bounded
// it (a file, an archive member, the farm's own stored spec), and the
// shape limits (maxNesting, the YAML decoder's alias check) keep its cost
// linear in the size. A bound there refused the normalised spec.yaml of a
// file within this one (block-style YAML lists are ~1.7 times a file's
// flow-style ones), so such a campaign could not be exported.
const MaxFileSize = 64 << 20

// ReadTraceFile reads the trace a sweep names in trace.file, on the
// submitting machine, parses it as SWF and pins its canonical form
// (swf.Canonical) by content: f.Trace.SHA256 and Size are set from that
// form, and its bytes — never the file as read — are returned for upload
// to storage (storage.PutTrace). A file that does not parse as SWF is
// refused without quoting it. It is the only reader of trace.file: the
// coordinator and the workers see the sha256, never the path.
//
// limit bounds the size in bytes (<= 0: no limit). A device, FIFO,
// directory or anything else that is not a regular file is refused
// without being read, so /dev/zero or a named pipe fails at once with an
// error naming trace.file. A sha256 or size given in the sweep must match
// the file. With no trace, or a trace given by sha256 alone (already in
// storage), it returns nil.
func ReadTraceFile(f *File, limit int64) ([]byte, error) {
	data, err := readTraceFile(f, limit)
	if err != nil {
		return nil, f.src.locate(err)
	}
	return data, nil
}

func readTraceFile(f *File, limit int64) ([]byte, error) {
	if f.Trace == nil {
		return nil, nil
	}
	if f.Trace.File == "" {
		if f.Trace.SHA256 == "" {
			return nil, fmt.Errorf("trace: give file (an SWF file) or the sha256 and size of a trace already in storage")
		}
		return nil, nil
	}
	// Parsed as it is read: the file was read whole first, and its
	// canonical form built whole before its size was checked (a 10⁷-line
	// trace took 5 GB to be refused).
	fd, raw, err := openLimited(f.Trace.File, limit, "trace.file")
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	data, shape, err := canonicalTrace(f, raw, limit)
	if err != nil {
		return nil, err
	}
	// What building the form left (its chunks, the parser's buffers) is
	// freed now, while the form is all the heap holds: at the default
	// pace the next cycle would otherwise wait for the heap to reach
	// twice the form and its chunks, which planning's conversions then
	// reached (a 5·10⁶-job trace: about 300 MB more at the peak).
	runtime.GC()
	s := sha256.Sum256(data)
	sum := hex.EncodeToString(s[:])
	if f.Trace.SHA256 != "" && f.Trace.SHA256 != sum {
		return nil, fmt.Errorf("trace.sha256: the sweep says %s, but trace.file %s has (in its canonical form) sha256 %s", f.Trace.SHA256, f.Trace.File, sum)
	}
	if f.Trace.Size != 0 && f.Trace.Size != int64(len(data)) {
		return nil, fmt.Errorf("trace.size: the sweep says %d, but trace.file %s has %d bytes in its canonical form", f.Trace.Size, f.Trace.File, len(data))
	}
	f.Trace.SHA256, f.Trace.Size = sum, int64(len(data))
	f.Trace.local, f.Trace.shape = data, shape
	return data, nil
}

// AttachStoredTrace gives a sweep whose trace is named by sha256 alone
// that trace's canonical bytes, which fetch reads from storage on the
// submitting machine (they were uploaded there in that form:
// storage.PutTrace), so that Plan tries its policies on the trace as it
// does for trace.file. fetch returns nil bytes and no error when there is
// nothing to read from (no storage given): the trace is then left to the
// workers. The bytes must have the sha256 and size the sweep gives;
// whether they leave each servers value a usable job is Plan's check
// (traceWorkload), as for trace.file. Errors name trace.sha256 at its
// line.
func AttachStoredTrace(f *File, fetch func(sum string, size int64) ([]byte, error)) error {
	if f.Trace == nil || f.Trace.File != "" || f.Trace.local != nil || fetch == nil {
		return nil
	}
	data, err := fetch(f.Trace.SHA256, f.Trace.Size)
	if err != nil {
		return f.src.locate(fieldErr("trace.sha256", nil, "%v", err))
	}
	if data == nil {
		return nil
	}
	s := sha256.Sum256(data)
	if sum := hex.EncodeToString(s[:]); sum != f.Trace.SHA256 {
		return f.src.locate(fieldErr("trace.sha256", nil, "the stored trace has sha256 %s, not the sweep's %s", sum, f.Trace.SHA256))
	}
	if f.Trace.Size != 0 && f.Trace.Size != int64(len(data)) {
		return f.src.locate(fieldErr("trace.size", nil, "the stored trace has %d bytes, the sweep says %d", len(data), f.Trace.Size))
	}
	// Its shape now, once (the bytes are parsed here as ReadTraceFile
	// parses a file); bytes that do not parse are refused at the first
	// point that needs them, with Read's error (localShape), as before:
	// ShapeOf's error is not this one's, and its shape is then nil.
	shape, _ := swf.ShapeOf(bytes.NewReader(data), swf.Limits{})
	f.Trace.local, f.Trace.shape = data, shape
	return nil
}

// ErrNoLocalTrace: the campaign's trace was not read on this machine (it
// is named by sha256 alone, or the campaign was decoded from a stored
// spec), so only storage has it.
var ErrNoLocalTrace = errors.New("the trace was not read on this machine (named by sha256 alone): only storage has it")

// ForFarm is f as the farm has it: a copy without the trace content read
// on this machine (ReadTraceFile, AttachStoredTrace), which only the
// submitting client plans with; f itself is unchanged. A coordinator
// plans with it whatever process it runs in: the one `msjfarm run`
// embeds, handed the File the command had planned, parsed the trace
// again at each servers value to try the policies the command had just
// tried on it, and kept the content for as long as it kept the campaign.
func (f *File) ForFarm() *File {
	if f == nil || f.Trace == nil || f.Trace.local == nil {
		return f
	}
	g, tr := *f, *f.Trace
	tr.local, tr.shape = nil, nil
	g.Trace = &tr
	return &g
}

// canonicalTrace parses the trace file's content, read from raw, as SWF,
// on the submitting machine, and returns its canonical form
// (swf.Canonical), the only bytes that are uploaded: a file that is not a
// trace — a secrets file named by mistake or on purpose,
// /proc/self/environ, /etc/shadow — is refused here, and nothing of it
// leaves the machine. The error names the line and field but never
// quotes the file's text. The canonical form must fit in limit too (a
// gzipped trace grows), refused at the line that crosses it, and must
// have a usable job for the sweep's servers (or the header's).
func canonicalTrace(f *File, raw io.Reader, limit int64) ([]byte, *swf.Shape, error) {
	// The checks read the counts gathered as the form was written
	// (swf.Shape: what parsing it again gives, without the jobs): the
	// form was parsed again for them, 80 bytes a job held for nothing.
	data, shape, err := swf.CanonicalShape(raw, swf.Limits{MaxCanonical: max(limit, 0)})
	var grew *grewError
	switch {
	case errors.As(err, &grew):
		return nil, nil, grew
	case errors.Is(err, swf.ErrCanonicalTooLarge):
		pe, _ := errors.AsType[*swf.ParseError](err)
		return nil, nil, fieldErr("trace.file", nil, "%s is larger than the limit of %d bytes (--max-trace-size) once decompressed and parsed: its canonical form crosses it at line %d; nothing was uploaded", f.Trace.File, limit, pe.Line)
	case err != nil:
		return nil, nil, fieldErr("trace.file", nil, "%s is not an SWF trace (%s); nothing was uploaded", f.Trace.File, SWFReason(err))
	}
	c, err := shape.At(f.Servers)
	_, serversAxis := f.Axes["servers"]
	switch {
	case errors.Is(err, swf.ErrNoServers) && !serversAxis:
		return nil, nil, fieldErr("servers", nil, "trace.file %s has no MaxProcs or MaxNodes header line: give servers", f.Trace.File)
	case err == nil && f.Servers == 0 && !serversAxis && c.K > sim.MaxServers:
		return nil, nil, fieldErr("servers", nil, "trace.file %s gives %d servers in its header, more than the %d msjfarm simulates: give servers", f.Trace.File, c.K, sim.MaxServers)
	case err == nil && c.Kept == 0:
		return nil, nil, fieldErr("trace.file", nil, "%s %s", f.Trace.File, noUsableJob(c.K, c.Lines, c.Skipped))
	}
	return data, shape, nil
}

// noUsableJob says why a trace of lines job lines, skipped as skip says
// on k servers, has no job to replay.
func noUsableJob(k, lines int, skip swf.SkipCounts) string {
	return fmt.Sprintf("has no usable job on %d servers (of %d job lines: %d without a submit time, %d without a run time, %d without processors, %d wider than the servers)",
		k, lines, skip.Submit, skip.RunTime, skip.Procs, skip.TooWide)
}

// traceWorkload is the workload a worker replays at a point of servers
// spec.Servers (0: the trace header's) with trace's time scale, built from
// the trace read here (LocalTraceWorkload); a servers value that leaves
// the trace no job, or fewer jobs than each replication replays, is an
// error naming it.
func (c *Campaign) traceWorkload(spec workload.Spec, trace *TraceRef) (*sim.Workload, error) {
	w, err := c.LocalTraceWorkload(spec.Name, spec.Servers, trace.TimeScale)
	if err != nil {
		return nil, err
	}
	if m := c.File.Run.Warmup + c.File.Run.Arrivals; m > int64(len(w.Trace)) {
		return nil, fieldErr("run.arrivals", nil, "warmup+arrivals = %d, but the trace has %d usable jobs on %d servers: a replication replays at most that many", m, len(w.Trace), w.Servers)
	}
	return w, nil
}

// LocalTraceCounts is what a parse of the trace read here reports for a
// system of servers servers (0: the header's), without its jobs; a
// servers value that leaves the trace no usable job is an error naming
// it. It is ErrNoLocalTrace without a trace read here.
func (c *Campaign) LocalTraceCounts(servers int) (swf.Counts, error) {
	shape, err := c.localShape()
	if err != nil {
		return swf.Counts{}, fmt.Errorf("trace: %w", err)
	}
	n, err := shape.At(servers)
	if err != nil {
		return swf.Counts{}, fmt.Errorf("trace: %w", err)
	}
	if n.Kept == 0 {
		return swf.Counts{}, fmt.Errorf("trace %s", noUsableJob(n.K, n.Lines, n.Skipped))
	}
	return n, nil
}

// LocalTraceWorkload is the workload, named name, that a worker replays
// of the trace read here on servers servers (0: the header's) at time
// scale timeScale (a worker reads the same canonical bytes,
// worker.traceCache): workload.FromTrace's of the parsed trace, built
// from the trace's counts (LocalTraceCounts) and its kept jobs as they
// are read again from the canonical bytes. The parsed trace is never
// built: it was about 90 bytes a kept job more at every servers value,
// and a dry run's calibrations kept it beside the workload.
func (c *Campaign) LocalTraceWorkload(name string, servers int, timeScale float64) (*sim.Workload, error) {
	n, err := c.LocalTraceCounts(servers)
	if err != nil {
		return nil, err
	}
	local := c.File.Trace.local
	return workload.FromJobs(name, n, func(yield func(swf.Job) error) error {
		return swf.EachKept(bytes.NewReader(local), n.K, swf.Limits{}, yield)
	}, timeScale)
}

// localShape is the shape of the trace read here (TraceSpec.shape). Bytes
// without one (read from storage, they did not parse) are parsed again
// for the error, which is swf.Read's of them, with its default limits:
// what the parse and the point that needed them said when they were
// read whole. Nothing is written to the File, which calibrations may
// read from several goroutines. It is ErrNoLocalTrace without a trace.
func (c *Campaign) localShape() (*swf.Shape, error) {
	if c.File == nil || c.File.Trace == nil || c.File.Trace.local == nil {
		return nil, ErrNoLocalTrace
	}
	if t := c.File.Trace; t.shape != nil {
		return t.shape, nil
	}
	return swf.ShapeOf(bytes.NewReader(c.File.Trace.local), swf.Limits{})
}

// SWFReason says why a file is not an SWF trace without quoting it: the
// line and field, never the value, for the file may be one of secrets
// named by mistake (a parse error's Value holds the text).
func SWFReason(err error) string {
	var pe *swf.ParseError
	if errors.As(err, &pe) {
		switch {
		case pe.Field > 0:
			return fmt.Sprintf("line %d, field %d (%s): %s", pe.Line, pe.Field, pe.Name, pe.Reason)
		case pe.Name != "":
			return fmt.Sprintf("line %d: %s %s", pe.Line, pe.Name, pe.Reason)
		}
		return fmt.Sprintf("line %d: %s", pe.Line, pe.Reason)
	}
	return strings.TrimPrefix(err.Error(), "swf: ")
}

// readLimited reads the regular file at path, refusing anything else and
// anything over limit bytes (<= 0: no limit); what names the file in
// errors (a sweep field).
func readLimited(path string, limit int64, what string) ([]byte, error) {
	fd, r, err := openLimited(path, limit, what)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		if g, ok := errors.AsType[*grewError](err); ok {
			return nil, g
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return data, nil
}

// openLimited opens the regular file at path for reading at most limit
// bytes (<= 0: no limit), refusing anything else and a file over limit
// bytes; the reader fails with a *grewError past the limit. The file is
// opened non-blocking, so a path swapped for a FIFO between the check
// and the open cannot hang the reader, and checked again on the open
// descriptor. The caller closes the file.
func openLimited(path string, limit int64, what string) (*os.File, io.Reader, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, openErr(what, path, err)
	}
	if err := regular(fi, limit, what, path); err != nil {
		return nil, nil, err
	}
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, openErr(what, path, err)
	}
	if fi, err = fd.Stat(); err == nil {
		err = regular(fi, limit, what, path)
	} else {
		err = fmt.Errorf("%s: %w", what, err)
	}
	if err != nil {
		fd.Close()
		return nil, nil, err
	}
	if limit <= 0 {
		return fd, fd, nil
	}
	return fd, &grewReader{r: fd, left: limit, err: &grewError{what, path, limit}}, nil
}

// openErr says in words why the file at path could not be opened: the
// system's error named its call and printed the path raw ("trace.file:
// stat \e]0;pwn\a.swf: no such file or directory" retitled the
// terminal). It wraps err, for errors.Is.
func openErr(what, path string, err error) error {
	why := "cannot be read"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "does not exist"
	case errors.Is(err, fs.ErrPermission):
		why = "cannot be read: permission denied"
	default:
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			why += ": " + pe.Err.Error()
		} else {
			why += ": " + err.Error()
		}
	}
	return &fileError{msg: fmt.Sprintf("%s: %s %s", what, shownPath(path), why), err: err}
}

// fileError is openErr's error: its message, and the system's error it
// wraps.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// shownPath is a path as errors show it: its control characters
// escaped (termtext.OneLine), since the errors of the sweep file itself
// reach the terminal without passing through Error, and clipped to
// maxQuoted bytes.
func shownPath(path string) string { return termtext.Clip(termtext.OneLine(path), maxQuoted) }

// grewError: a file grew past its limit while it was read.
type grewError struct {
	what, path string
	limit      int64
}

func (e *grewError) Error() string {
	return fmt.Sprintf("%s: %s grew past the limit of %d bytes while being read", e.what, shownPath(e.path), e.limit)
}

// grewReader reads at most left bytes from r, then fails with err if r
// has more.
type grewReader struct {
	r    io.Reader
	left int64
	err  error
}

func (g *grewReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		// One byte more tells a file of exactly the limit from a longer one.
		var one [1]byte
		n, err := g.r.Read(one[:])
		if n > 0 {
			err = g.err
		}
		return 0, err
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.r.Read(p)
	g.left -= int64(n)
	return n, err
}

func regular(fi os.FileInfo, limit int64, what, path string) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %s is %s, not a regular file: refused without reading it", what, shownPath(path), kind(fi.Mode()))
	}
	if limit > 0 && fi.Size() > limit {
		return fmt.Errorf("%s: %s has %d bytes, more than the limit of %d", what, shownPath(path), fi.Size(), limit)
	}
	return nil
}

// kind names a file type for an error message.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
