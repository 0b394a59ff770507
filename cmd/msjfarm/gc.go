package main

import (
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"os"
	"time"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// runGC lists the stored results no campaign refers to and, with --delete,
// removes them (record.Unreferenced says which are safe to consider).
func defGC(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	del := ff.fs.Bool("delete", false, "remove the unreferenced results (without it, only list them)")
	minAge := ff.fs.Duration("min-age", time.Hour, "consider only results older than this (a younger one may be about to be referenced by a running campaign)")
	quiet := ff.fs.BoolP("q", "q", false, "print only the totals")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 0 {
			return fail("gc: takes no arguments (flags: --storage, --delete, --min-age)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		st, err := ff.existingStore(ctx)
		if err != nil {
			return fail("gc: %v", err)
		}
		infos, err := record.Unreferenced(ctx, st, *minAge)
		if err != nil {
			return fail("gc: %v", err)
		}
		var bytes int64
		for _, in := range infos {
			bytes += in.Size
			if !*quiet {
				fmt.Printf("%s\t%d\t%s\n", in.Key, in.Size, in.ModTime.Local().Format(time.DateTime))
			}
		}
		if !*del {
			fmt.Fprintf(os.Stderr, "msjfarm gc: %d results (%d bytes) in %s are referenced by no campaign and older than %s; --delete removes them\n",
				len(infos), bytes, st.URL(), *minAge)
			return 0
		}
		for _, in := range infos {
			if err := st.Delete(ctx, in.Key); err != nil {
				return fail("gc: %v", err)
			}
			// Its imported mark too (after the result: a mark left by a
			// crash between the two only costs a run that agrees).
			if key, ok := storage.StoredResultContentKey(in.Key); ok {
				if err := st.Delete(ctx, storage.ImportedKey(key)); err != nil {
					return fail("gc: %v", err)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "msjfarm gc: removed %d unreferenced results (%d bytes) from %s\n", len(infos), bytes, st.URL())
		return 0
	}
}
