package task

import "testing"

// RuntimeValue makes a value once per runtime and key, and keeps each
// runtime's values apart.
func TestRuntimeValue(t *testing.T) {
	var keyA, keyB byte
	a, b := &stubRuntime{}, &stubRuntime{}
	made := 0
	mk := func() *int { made++; v := made; return &v }
	a1 := RuntimeValue(a, &keyA, mk)
	if a2 := RuntimeValue(a, &keyA, mk); a2 != a1 || made != 1 {
		t.Fatalf("second call on the same runtime and key: %p (first %p), made %d times", a2, a1, made)
	}
	if ab := RuntimeValue(a, &keyB, mk); ab == a1 || *ab != 2 {
		t.Fatalf("another key on the same runtime got %d (the first key's is %d)", *ab, *a1)
	}
	if b1 := RuntimeValue(b, &keyA, mk); b1 == a1 || *b1 != 3 {
		t.Fatalf("the same key on another runtime got %d (the first runtime's is %d)", *b1, *a1)
	}
	if made != 3 {
		t.Fatalf("made %d values, want 3", made)
	}
}
