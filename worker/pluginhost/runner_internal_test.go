package pluginhost

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineCapped: a newline after every max bytes without one, and nothing
// else changed, however the pipe's reads are cut. With max = 4,
// "ab\ncdefghij\nk" is "ab", "cdef" (cut), "ghij" (cut), then the input's
// own newline after a cut (an empty line), then "k".
func TestLineCapped(t *testing.T) {
	const in, want = "ab\ncdefghij\nk", "ab\ncdef\nghij\n\nk"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		got, err := io.ReadAll(&lineCapped{r: io.NopCloser(r), max: 4})
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}
