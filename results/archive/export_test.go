package archive

// MaxWarnings lets a test lower how many warnings a pass lists.
var MaxWarnings = &maxWarnings
