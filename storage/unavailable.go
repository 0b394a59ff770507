package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// IsUnavailable reports whether err is a Store operation that failed
// because the store could not serve it now — unreachable (connection
// refused or reset, timeout, DNS), overloaded or failing (HTTP 5xx,
// MinIO's storage full or not yet initialised), refusing access (revoked
// credentials, a deleted bucket), or a local disk that is full, over
// quota, read-only, failing (EIO) or not permitted — rather than because
// of the request itself (a missing key, an invalid key).
//
// The distinction matters to a worker: an unavailable store is nobody's
// task failure, so the worker holds finished results, pauses, and retries
// until the store is back instead of spending the task's deliveries
// (worker package doc). Only errors that went through a Store method (an
// *Error in the chain) qualify: the same errno from elsewhere, say a
// plugin's broken pipe, says nothing about storage.
func IsUnavailable(err error) bool {
	var se *Error
	if !errors.As(err, &se) {
		return false
	}
	return Reason(se.Err) != ""
}

// Reason names, in a few words, why err means storage is unavailable or
// misconfigured ("connection refused", "disk full (no space left on
// device)", "access denied (check the credentials)"...), or returns "" when
// err is not such an error (nil, not found, an invalid key, a cancelled
// context, a malformed object). Messages use it so that an operator reads
// the cause first, before the chain of wrapped errors.
//
// The server's own answer is read first (an S3 error response decides
// alone), then the system's errno, then what failed below HTTP.
func Reason(err error) string {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidKey) || errors.Is(err, context.Canceled) {
		return ""
	}
	var er minio.ErrorResponse
	if errors.As(err, &er) && (er.Code != "" || er.StatusCode != 0) {
		return s3Reason(er)
	}
	for _, c := range errnoReasons {
		if errors.Is(err, c.errno) {
			return c.reason
		}
	}
	return transportReason(err)
}

// s3Reason reads an S3 error response: its code when it is one of
// unavailability, else its HTTP status ("" for a request's own error).
func s3Reason(er minio.ErrorResponse) string {
	switch er.Code {
	case minio.InvalidAccessKeyID, minio.SignatureDoesNotMatch, minio.AccessDenied, "InvalidToken", "ExpiredToken":
		return "access denied (" + er.Code + ": check the credentials and the bucket policy)"
	case minio.NoSuchBucket:
		return "bucket missing (NoSuchBucket)"
	case "XMinioStorageFull":
		return "the server's disks are full (XMinioStorageFull)"
	case "XMinioServerNotInitialized", "SlowDown", "ServiceUnavailable", "RequestTimeout", "InternalError",
		"XMinioReadQuorum", "XMinioWriteQuorum", "XMinioServerTimedOut":
		return "server not ready (" + er.Code + ")"
	}
	if er.StatusCode >= 500 || er.StatusCode == http.StatusRequestTimeout || er.StatusCode == http.StatusTooManyRequests {
		return "server error (HTTP " + http.StatusText(er.StatusCode) + ")"
	}
	if er.StatusCode == http.StatusForbidden {
		return "access denied (HTTP 403: check the credentials and the bucket policy)"
	}
	return ""
}

// transportReason names a failure of the connection itself: a timeout,
// a transfer cut short, DNS, or any other network or round-trip error.
func transportReason(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection cut mid-transfer"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "timed out"
	}
	if de, ok := errors.AsType[*net.DNSError](err); ok {
		return "DNS lookup of " + de.Name + " failed"
	}
	if r := certReason(err); r != "" {
		return r
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return "network error"
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		// An HTTP round trip that failed below HTTP (EOF on a reused
		// connection, a TLS handshake cut short): the server did not
		// answer the request.
		return "network error"
	}
	return ""
}

// certReason names a TLS certificate the client would not trust, with
// what to do: an S3 endpoint with a private CA said only "network error",
// where the NATS connection's errors named --nats-ca.
func certReason(err error) string {
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return "the server's certificate is signed by an authority this machine does not trust (give its CA: --s3-ca, --ca or MSJFARM_S3_CA)"
	}
	if he, ok := errors.AsType[x509.HostnameError](err); ok {
		return "the server's certificate is not for this host name (" + he.Error() + ")"
	}
	if ce, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return "the server's certificate is not valid (" + ce.Error() + ")"
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return "the server does not speak TLS (an http:// server: add secure=false to the store URL)"
	}
	return ""
}

// Lasting reports whether err is a local disk refusing writes in a way
// that waiting does not mend: full, over quota, read-only or not
// permitted (errnoReasons' lasting ones). A caller alone on its store
// (`msjfarm run`) stops at such an error rather than retrying for ever;
// a farm's coordinator retries, since an operator may free the disk.
func Lasting(err error) bool {
	for _, c := range errnoReasons {
		if c.lasting && errors.Is(err, c.errno) {
			return true
		}
	}
	return false
}

var errnoReasons = []struct {
	errno   syscall.Errno
	reason  string
	lasting bool // Lasting
}{
	{syscall.ECONNREFUSED, "connection refused (is the server running?)", false},
	{syscall.ECONNRESET, "connection reset", false},
	{syscall.ECONNABORTED, "connection aborted", false},
	{syscall.EPIPE, "connection closed (broken pipe)", false},
	{syscall.EHOSTUNREACH, "host unreachable", false},
	{syscall.ENETUNREACH, "network unreachable", false},
	{syscall.ENETDOWN, "network down", false},
	{syscall.ETIMEDOUT, "timed out", false},
	{syscall.ENOSPC, "disk full (no space left on device)", true},
	{syscall.EDQUOT, "disk quota exceeded", true},
	{syscall.EROFS, "read-only file system", true},
	{syscall.EIO, "I/O error on the disk", false},
	{syscall.EACCES, "permission denied", true},
	{syscall.EPERM, "operation not permitted", true},
	{syscall.EMFILE, "too many open files", false},
	{syscall.ENFILE, "too many open files in the system", false},
	{syscall.ENOMEM, "out of memory", false},
	{syscall.ESTALE, "stale file handle (network file system)", false},
}
