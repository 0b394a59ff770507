package storage

import "strings"

// Storage layout (DESIGN.md §6). Campaign ids, task ids, plugin names and
// sha256 digests must be single path components (no "/"); the Store rejects
// keys containing "..", empty components and the like.
//
//	campaigns/<id>/spec.yaml              CampaignSpecKey
//	campaigns/<id>/manifest.json          ManifestKey
//	campaigns/<id>/results/<task>.json    ResultKey (under ResultsPrefix)
//	campaigns/<id>/summary.csv            SummaryKey
//	campaigns/<id>/report/                ReportPrefix
//	plugins/<name>/<sha256>               PluginKey

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

// PluginKey is the key of a plugin binary, addressed by its hex sha256.
func PluginKey(name, sha256 string) string { return "plugins/" + name + "/" + sha256 }
