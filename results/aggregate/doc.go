package aggregate

import _ "embed"

// ColumnsDoc is COLUMNS.md, the documentation of the summary, long and
// per-replication tables, for reports that ship it beside the data (a
// reader of a report has the files, not this repository).
//
//go:embed COLUMNS.md
var ColumnsDoc string
