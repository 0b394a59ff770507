package bundle

import (
	"strconv"
	"strings"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Per-member limits of the members a reader loads into memory whole, from
// what an honest campaign can hold, checked from a member's tar header
// before any of its bytes are read (admit), and by export as it writes
// (fits). Without them a member was bounded only by MaxMember (1 GiB):
// manifest.json padded with 1 GiB of spaces (valid JSON, covered by no
// checksum), a 49 KB archive, made `archive import` take 14.5 GB and 75 s
// and write 3 GB into the store; spec.yaml padded with 1 GiB of newlines
// made `report` take 3.1 GB.
const (
	// MaxSpec bounds a campaign's spec.yaml, the normalised sweep: a
	// sweep file is at most sweep.MaxFileSize, and its block-style
	// normal form at most about 1.7 times its flow-style lists.
	MaxSpec = 2 * sweep.MaxFileSize
	// MaxManifest bounds a campaign's manifest.json: its sweep (as JSON,
	// at most twice the spec), and per-point and per-task lists (the point
	// order, the precision outcome of each point, a version-1 manifest's
	// seeds, about 170 bytes a task) of a campaign an archive can hold
	// (2·10^6 replications). Once the spec is read, manifestBound holds a
	// manifest to what its own campaign's points and tasks can make.
	MaxManifest = 2*MaxSpec + 256<<20
	// maxCampaignSmall bounds a campaign's layout and plugins.json (its
	// NATS layout and plugin pins: a few kilobytes).
	maxCampaignSmall = 16 << 20
)

// memberLimit is the size limit of the member name, and what it is (0
// when the member has only MaxMember): the members every reader loads
// into memory whole.
func memberLimit(name string) (int64, string) {
	switch name {
	case FormatMember, SignatureMember:
		return maxFormat, "this member"
	case ProvenanceMember, ROCrateMember, CitationMember:
		return maxDescription, "this member (export writes a few kilobytes)"
	case SubmittedMember:
		return sweep.MaxFileSize, "the sweep file as submitted (a sweep file's limit)"
	}
	key, ok := strings.CutPrefix(name, StorePrefix)
	if !ok {
		return 0, ""
	}
	rest, ok := strings.CutPrefix(key, "campaigns/")
	if !ok {
		return 0, ""
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || key != storage.CampaignPrefix(id)+tail {
		return 0, ""
	}
	switch tail {
	case "spec.yaml":
		return MaxSpec, "a campaign's spec (the normalised sweep file, whose limit is " + sizeText(sweep.MaxFileSize) + ")"
	case "manifest.json":
		return MaxManifest, "a campaign's manifest (its sweep and per-point lists)"
	case "layout", "plugins.json":
		return maxCampaignSmall, "this campaign object (a few kilobytes)"
	}
	return 0, ""
}

// sizeText is n bytes in MiB when whole.
func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// memberOver: size is past name's limit (memberLimit).
func memberOver(name string, size int64) bool {
	max, _ := memberLimit(name)
	return max > 0 && size > max
}
