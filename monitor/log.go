package monitor

import (
	"fmt"
	"io"
	"log/slog"
)

// NewLogger is the commands' logger: "text" (the default, key=value
// lines) or "json" (one object per line, for log collectors); flag names
// the option in the error.
func NewLogger(w io.Writer, flag, format string, level slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("%s %q: want text or json", flag, format)
}

// Logf adapts l to the printf-style Logf options of the coordinator and
// the worker (lines at Info level).
func Logf(l *slog.Logger) func(format string, args ...any) {
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}
