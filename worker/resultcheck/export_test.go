package resultcheck

// Burstiness lets the calibration tests scale the edge term as the check
// does.
var Burstiness = burstiness
