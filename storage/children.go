package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// ChildLister is a Store that lists the names directly under a prefix
// without walking the objects below them (a directory's entries, S3's
// common prefixes).
type ChildLister interface {
	ListChildren(ctx context.Context, prefix string) ([]string, error)
}

// Children returns the names directly under prefix (which ends in "/")
// that hold objects, sorted: Children(ctx, st, "campaigns/") is every
// campaign id, in time proportional to the campaigns, where List walks
// every result of every campaign (10^7 objects in a large store). A store
// that is not a ChildLister is listed whole.
func Children(ctx context.Context, st Store, prefix string) ([]string, error) {
	if cl, ok := st.(ChildLister); ok {
		return cl.ListChildren(ctx, prefix)
	}
	keys, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if name, _, ok := strings.Cut(strings.TrimPrefix(k, prefix), "/"); ok && name != "" && (len(out) == 0 || out[len(out)-1] != name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// childPrefix checks a ListChildren prefix: a valid one, ending in "/".
func childPrefix(prefix string) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	if !strings.HasSuffix(prefix, "/") {
		return errors.New("a prefix whose children are listed ends in /")
	}
	return nil
}

func (s *localStore) ListChildren(ctx context.Context, prefix string) ([]string, error) {
	if err := childPrefix(prefix); err != nil {
		return nil, invalidKey("list", prefix, s.url, err)
	}
	ents, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(prefix)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, keyErr("list", prefix, s.url, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), tmpMarker) {
			out = append(out, e.Name())
		}
	}
	return out, ctx.Err()
}

func (s *s3Store) ListChildren(ctx context.Context, prefix string) ([]string, error) {
	if err := childPrefix(prefix); err != nil {
		return nil, invalidKey("list", prefix, s.url, err)
	}
	var out []string
	for info := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.base + prefix, Recursive: false}) {
		if info.Err != nil {
			return nil, keyErr("list", prefix, s.url, info.Err)
		}
		name, ok := strings.CutPrefix(info.Key, s.base+prefix)
		if name, dir := strings.CutSuffix(name, "/"); ok && dir && name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}
