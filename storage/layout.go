package storage

import "strings"

// Storage layout (docs/design.md). Campaign ids, task ids, plugin names and
// sha256 digests must be single path components (no "/"); the Store rejects
// keys containing "..", empty components and the like.
//
//	campaigns/<id>/spec.yaml              CampaignSpecKey
//	campaigns/<id>/manifest.json          ManifestKey
//	campaigns/<id>/results/<task>.json    ResultKey (under ResultsPrefix): a reference to the
//	                                      stored result (results/record.Ref), a failure record,
//	                                      or (layout 1) the full result record
//	campaigns/<id>/layout                 LayoutKey: "2" once the campaign's results are
//	                                      references (absent: layout 1, see results/record.Migrate)
//	results/<kk>/<key>.json               StoredResultKey: one replication's result, stored once
//	                                      under its content key (results/record.Key)
//	campaigns/<id>/summary.csv            SummaryKey
//	campaigns/<id>/report/                ReportPrefix
//	campaigns/<id>/report/published       ReportMarkerKey: written last when a report is published
//	                                      whole (results/archive.PublishReport); absent: incomplete
//	campaigns/<id>/report.staging/        ReportStagingPrefix: a report being written
//	campaigns/<id>/checksums              ChecksumsKey: sha256sum of every result object, at finalisation
//	plugins/<name>/<sha256>               PluginKey
//	counters/<sha256>.json                CounterInfoKey: a policy's counter descriptions, by content
//	                                      (results/record.PutCounterInfo), referred to by result records
//	traces/<sha256>                       TraceKey: a replayed SWF trace, by content (trace.go)
//	runs/<id>.json                        a running `msjfarm run`'s server (protocol.LiveRunKey)
//	store-id                              IDKey: the store's identity, made once (ID)
//	imported/<kk>/<key>                   ImportedKey: the stored result <key> came from an archive
//	                                      import (the campaign's id inside) and no run here agreed yet

// CampaignPrefix is the prefix of every object of campaign id.
func CampaignPrefix(id string) string { return "campaigns/" + id + "/" }

// CampaignSpecKey is the key of the campaign's normalised sweep file.
func CampaignSpecKey(id string) string { return CampaignPrefix(id) + "spec.yaml" }

// ManifestKey is the key of the campaign manifest (versions, plugin sha256s,
// seeds, task count, timestamps).
func ManifestKey(id string) string { return CampaignPrefix(id) + "manifest.json" }

// ResultsPrefix is the prefix under which the campaign's results live; List
// it to find the tasks that are already done.
func ResultsPrefix(id string) string { return CampaignPrefix(id) + "results/" }

// ResultKey is the key of one replication's result, written with PutIfAbsent.
func ResultKey(campaign, task string) string { return ResultsPrefix(campaign) + task + ".json" }

// ResultTaskID returns the task id of a key returned by
// List(ctx, ResultsPrefix(campaign)), and false if key is not a result key of
// that campaign.
func ResultTaskID(campaign, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ResultsPrefix(campaign))
	if !ok {
		return "", false
	}
	task, ok := strings.CutSuffix(rest, ".json")
	if !ok || task == "" || strings.Contains(task, "/") {
		return "", false
	}
	return task, true
}

// SummaryKey is the key of the campaign's summary table (one row per point).
func SummaryKey(id string) string { return CampaignPrefix(id) + "summary.csv" }

// ReportPrefix is the prefix of the campaign's report (plots, index.html).
func ReportPrefix(id string) string { return CampaignPrefix(id) + "report/" }

// ReportMarkerKey is the object written last when a report is published
// (results/archive.PublishReport): a report prefix without it is a report
// whose writer was interrupted, which a finalisation rewrites instead of
// keeping.
func ReportMarkerKey(id string) string { return ReportPrefix(id) + "published" }

// ReportStagingPrefix is where a report is written before it is published
// under ReportPrefix.
func ReportStagingPrefix(id string) string { return CampaignPrefix(id) + "report.staging/" }

// ChecksumsKey is the campaign's list of result objects and their sha256
// (sha256sum format), written when it finalises.
func ChecksumsKey(id string) string { return CampaignPrefix(id) + "checksums" }

// PluginKey is the key of a plugin binary, addressed by its hex sha256.
func PluginKey(name, sha256 string) string { return "plugins/" + name + "/" + sha256 }

// LayoutKey marks a campaign whose result entries are references into the
// content-addressed store (layout 2); its absence means layout 1 (full
// records under the campaign), which results/record.Migrate converts.
func LayoutKey(id string) string { return CampaignPrefix(id) + "layout" }

// LayoutMarker is the content of a campaign's LayoutKey object.
var LayoutMarker = []byte("2\n")

// StoredResultsPrefix is the prefix of the content-addressed results.
const StoredResultsPrefix = "results/"

// StoredResultKey is where the result with content key key (hex,
// results/record.Key) is stored. The first two hex digits are a directory
// level, so that a local store never holds 10^5 files in one directory.
func StoredResultKey(key string) string {
	return StoredResultsPrefix + key[:2] + "/" + key + ".json"
}

// StoredResultContentKey returns the content key of a key listed under
// StoredResultsPrefix, and false for anything else.
func StoredResultContentKey(k string) (string, bool) {
	rest, ok := strings.CutPrefix(k, StoredResultsPrefix)
	if !ok {
		return "", false
	}
	dir, file, ok := strings.Cut(rest, "/")
	key, ok2 := strings.CutSuffix(file, ".json")
	if !ok || !ok2 || !contentKey(key) || dir != key[:2] {
		return "", false
	}
	return key, true
}

// contentKey: key is what results/record.Key makes, 32 lower-case hex
// digits. Any results/XY/XY….json was taken for a stored result, and
// `gc --delete` pointed at a directory that was not a store removed a
// user's results/20/2024-summary.json.
func contentKey(key string) bool { return LowerHex(key, 32) }

// LowerHex reports whether s is n lower-case hex digits: the form of
// msjfarm's identifiers (a store's, a campaign's, a result's content key).
func LowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ImportedPrefix is the prefix of the imported-result markers.
const ImportedPrefix = "imported/"

// ImportedKey marks the stored result with content key key as written by
// an archive import: its archive author's claim, which other campaigns do
// not reuse until a run here agrees with it (results/record.Reusable).
func ImportedKey(key string) string { return ImportedPrefix + key[:2] + "/" + key }

// ImportedContentKey returns the content key of a key listed under
// ImportedPrefix, and false for anything else.
func ImportedContentKey(k string) (string, bool) {
	rest, ok := strings.CutPrefix(k, ImportedPrefix)
	if !ok {
		return "", false
	}
	dir, key, ok := strings.Cut(rest, "/")
	if !ok || len(key) < 2 || dir != key[:2] || strings.Contains(key, "/") {
		return "", false
	}
	return key, true
}

// CounterInfosPrefix is the prefix of the stored counter descriptions.
const CounterInfosPrefix = "counters/"

// CounterInfoKey is where the counter descriptions whose encoding has
// sha256 sum (64 hex digits) are stored: by content, so that an object
// is only ever written with the bytes its name promises and a reader can
// check it (results/record.PutCounterInfo).
func CounterInfoKey(sum string) string { return CounterInfosPrefix + sum + ".json" }
