package canary

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEnable(t *testing.T) {
	const a, b Name = "a", "b"
	if On(a) {
		t.Fatal("on before Enable")
	}
	restore := Enable(a)
	if !On(a) || On(b) {
		t.Fatal("Enable(a) did not switch on exactly a")
	}
	restore()
	if On(a) {
		t.Fatal("still on after restore")
	}
}
