//go:build !linux

package prefault

// populate does nothing where there is no MADV_POPULATE_WRITE: the pages
// fault in on first write.
func populate([]byte) {}
