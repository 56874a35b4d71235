package fence

import "github.com/zkflow/zkflow/internal/canary"

// Canaries are the known bugs of the package, for the canary test.
var Canaries = []canary.Name{bugNoCheck, bugRefuseEqual, bugCheckOnce, bugReadNoClaim}
