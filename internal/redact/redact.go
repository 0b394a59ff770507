// Package redact removes credentials from URLs and text before they are
// printed, logged or stored. The farm takes NATS URLs that may carry a
// token (nats://TOKEN@host) or a user and password (nats://u:p@host), and
// nats.go's own Redacted form hides only a password, so a token would be
// printed in clear; every place that shows a URL goes through URL here.
package redact

import (
	"io"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// secretParams are query parameters whose values are credentials
// (compared case-insensitively).
var secretParams = []string{"token", "password", "pass", "passwd", "secret", "auth", "key",
	"access_key", "secret_key", "accesskey", "secretkey", "x-amz-credential", "x-amz-signature",
	"x-amz-security-token", "sig", "signature", "session_token", "jwt", "nkey", "seed"}

func secretParam(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretParams {
		if k == s || strings.HasSuffix(k, "_"+s) || strings.HasSuffix(k, "-"+s) {
			return true
		}
	}
	return false
}

// URL returns u with its credentials masked: a password and a user given
// alone (which NATS reads as a token) become Mask; a user with a password
// keeps the user name, which is not a secret and helps tell accounts apart.
// Secret-looking query parameters (token=, password=, ...) are masked too.
// A comma-separated list of URLs (a NATS cluster) is redacted element by
// element. Text that does not parse as a URL is returned with any
// "scheme://userinfo@" part masked all the same.
func URL(u string) string {
	if strings.Contains(u, ",") {
		parts := strings.Split(u, ",")
		for i, p := range parts {
			parts[i] = URL(strings.TrimSpace(p))
		}
		return strings.Join(parts, ",")
	}
	p, err := url.Parse(u)
	// A '/' in a token or password: the URL may still parse, as a host
	// and a path holding the '@' (nats://to/ken@h reads as host "to"),
	// with a user before it if the password also holds an '@'
	// (nats://farm:hunter2@corp/2024x@h reads as password "hunter2" and
	// host "corp", and "corp/2024x" was shown).
	if err != nil || p.Scheme == "" || strings.Contains(p.Path+p.RawQuery+p.Fragment, "@") {
		if _, _, ok := Userinfo(u); ok {
			// Cut at the last '@': a password holding '/' or '@' does
			// not parse, and the pattern below stops at its '/'.
			scheme, rest, _ := strings.Cut(u, "://")
			at := strings.LastIndex(rest, "@")
			if user, _, hasPassword := strings.Cut(rest[:at], ":"); hasPassword {
				return scheme + "://" + user + ":" + Mask + "@" + rest[at+1:]
			}
			return scheme + "://" + Mask + "@" + rest[at+1:]
		}
		return userinfoRE.ReplaceAllStringFunc(u, maskUserinfo)
	}
	query, secretQuery := maskQuery(p.RawQuery)
	// Nothing to mask: the text as it was, not as net/url would re-encode it.
	if p.User == nil && !secretQuery {
		return u
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Mask)
		} else if p.User.Username() != "" {
			p.User = url.User(Mask)
		}
	}
	p.RawQuery = query
	return p.String()
}

// Userinfo is the user and password of a URL written scheme://user:pass@host,
// found by text rather than url.Parse: everything between "://" and the
// last '@', so that a password holding '/', '+', '@' or a space, which
// url.Parse refuses (and then quotes whole in its error), is still known
// and can be masked. A user alone (nats://TOKEN@host) is returned as user.
func Userinfo(u string) (user, password string, ok bool) {
	_, rest, found := strings.Cut(u, "://")
	i := strings.LastIndex(rest, "@")
	if !found || i < 0 {
		return "", "", false
	}
	user, password, _ = strings.Cut(rest[:i], ":")
	return user, password, true
}

// maskQuery masks the values of the secret parameters of a raw query and
// leaves the rest as written: the order and encoding of the other
// parameters are kept, so a storage URL's endpoint=host:port reads as it was
// given and two URLs differing only in their secrets redact alike. Both '&'
// and ';' separate parameters (some servers accept either), so a secret is
// masked whichever the URL uses.
func maskQuery(raw string) (string, bool) {
	var b strings.Builder
	masked := false
	for raw != "" {
		i := strings.IndexAny(raw, "&;")
		part, sep := raw, ""
		if i >= 0 {
			part, sep, raw = raw[:i], raw[i:i+1], raw[i+1:]
		} else {
			raw = ""
		}
		k, _, _ := strings.Cut(part, "=")
		name := k
		if uk, err := url.QueryUnescape(k); err == nil {
			name = uk
		}
		if secretParam(name) {
			part, masked = k+"="+Mask, true
		}
		b.WriteString(part + sep)
	}
	return b.String(), masked
}

// userinfoRE finds the userinfo of URLs inside free text: scheme://...@.
var userinfoRE = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s"'<>]+@`)

// urlRE finds URLs with a scheme inside free text.
var urlRE = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

func maskUserinfo(m string) string {
	scheme, info, _ := strings.Cut(strings.TrimSuffix(m, "@"), "://")
	if user, _, ok := strings.Cut(info, ":"); ok {
		return scheme + "://" + user + ":" + Mask + "@"
	}
	return scheme + "://" + Mask + "@"
}

// Text masks the credentials of every URL found in s (an error message, a
// log line), then every occurrence of the given secrets (empty ones are
// ignored): a secret known to the process, such as a --nats-token value,
// is removed even where it appears outside a URL.
func Text(s string, secrets ...string) string {
	s = urlRE.ReplaceAllStringFunc(s, func(m string) string {
		// Keep trailing punctuation that ends a sentence out of the URL.
		trail := ""
		for len(m) > 0 && strings.ContainsRune(".,;:)]", rune(m[len(m)-1])) {
			trail = m[len(m)-1:] + trail
			m = m[:len(m)-1]
		}
		return URL(m) + trail
	})
	for _, sec := range secrets {
		switch {
		case sec == "":
		case len(sec) < wholeWordBelow:
			s = replaceWord(s, sec)
		default:
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return s
}

// wholeWordBelow is the length under which a secret is masked only where
// it stands alone, not inside a longer word: a password "farm" made every
// line begin "msjxxxxx:", which garbled the output and told the reader the
// secret.
const wholeWordBelow = 8

// replaceWord masks the occurrences of sec in s that no letter or digit
// touches on either side.
func replaceWord(s, sec string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, sec)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(sec)
		if (i > 0 && isWordByte(s[i-1])) || (j < len(s) && isWordByte(s[j])) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i] + Mask)
		s = s[j:]
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// Writer passes what is written to w through Text with secrets. Each Write
// is redacted on its own, so it suits writers that get whole lines (slog
// handlers, fmt.Fprintf of a line); a secret split across two writes is
// not caught.
func Writer(w io.Writer, secrets ...string) io.Writer { return &writer{w: w, secrets: secrets} }

type writer struct {
	w       io.Writer
	secrets []string
}

func (r *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, Text(string(p), r.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
