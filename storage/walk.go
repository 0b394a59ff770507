package storage

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// Walker is implemented by stores that can list keys without holding
// them all: Walk calls fn for every key that starts with prefix, in no
// particular order, holding at most a page of keys (a few hundred) at a
// time. List holds every key at once (~100 bytes each), which for the
// results of a 10^6-task campaign is ~100 MB; a reader that only filters
// or counts keys walks instead.
type Walker interface {
	Walk(ctx context.Context, prefix string, fn func(key string) error) error
}

// Walk calls fn for every key of st that starts with prefix (in no
// particular order), a page at a time when st is a Walker, else from
// List. An error from fn stops the walk and is returned.
func Walk(ctx context.Context, st Store, prefix string, fn func(key string) error) error {
	if w, ok := st.(Walker); ok {
		return w.Walk(ctx, prefix, fn)
	}
	keys, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// walkPage is how many directory entries the local store reads at once.
const walkPage = 256

// Walk reads the directories below the deepest one prefix names
// completely, walkPage entries at a time (os.File.ReadDir(n): unsorted,
// unlike filepath.WalkDir, which reads and sorts a whole directory).
func (s *localStore) Walk(ctx context.Context, prefix string, fn func(key string) error) error {
	if err := validatePrefix(prefix); err != nil {
		return invalidKey("list", prefix, s.url, err)
	}
	start := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = prefix[:i]
	}
	return s.walkDir(ctx, start, prefix, fn, true)
}

// walkDir walks directory dir (a key prefix without its final "/"; ""
// is the root), calling fn for the regular files whose key starts with
// prefix. A missing start directory means nothing is stored there.
func (s *localStore) walkDir(ctx context.Context, dir, prefix string, fn func(string) error, top bool) error {
	f, err := os.Open(filepath.Join(s.root, filepath.FromSlash(dir)))
	if err != nil {
		if top && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
			return nil
		}
		return keyErr("list", prefix, s.url, err)
	}
	defer f.Close()
	for {
		if err := ctx.Err(); err != nil {
			return keyErr("list", prefix, s.url, err)
		}
		ents, err := f.ReadDir(walkPage)
		for _, d := range ents {
			if err := s.walkEntry(ctx, dir, prefix, d, fn); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			return nil
		}
		if err != nil {
			if top && errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			return keyErr("list", prefix, s.url, err)
		}
	}
}

// walkEntry is one directory entry of walkDir: a temporary file or
// directory is skipped, a directory the prefix may reach is descended
// into, a regular file under the prefix is passed to fn.
func (s *localStore) walkEntry(ctx context.Context, dir, prefix string, d fs.DirEntry, fn func(string) error) error {
	if strings.HasPrefix(d.Name(), tmpMarker) {
		return nil
	}
	key := d.Name()
	if dir != "" {
		key = path.Join(dir, d.Name())
	}
	switch {
	case d.IsDir():
		// Descend only where keys under the prefix can be.
		if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
			return s.walkDir(ctx, key, prefix, fn, false)
		}
		return nil
	case d.Type().IsRegular() && strings.HasPrefix(key, prefix):
		return fn(key)
	}
	return nil
}

// Walk pages through ListObjects (1,000 keys a page, as S3 returns them)
// without collecting the keys.
func (s *s3Store) Walk(ctx context.Context, prefix string, fn func(key string) error) error {
	if err := validatePrefix(prefix); err != nil {
		return invalidKey("list", prefix, s.url, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn returns an error
	for info := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.base + prefix, Recursive: true}) {
		if info.Err != nil {
			return keyErr("list", prefix, s.url, info.Err)
		}
		key, ok := strings.CutPrefix(info.Key, s.base)
		if ok && ValidateKey(key) == nil {
			if err := fn(key); err != nil {
				return err
			}
		}
	}
	return nil
}
