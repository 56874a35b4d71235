package fakezk

// SeqName is seqName, for the tests of package fakezk_test.
var SeqName = seqName
