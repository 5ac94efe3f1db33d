package textdiff

import "testing"

func TestUnified(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	want := `--- a
+++ b
@@ -1,7 +1,7 @@
 1
 2
 3
-4
+four
 5
 6
 7
@@ -10,3 +10,4 @@
 10
 11
 12
+13
`
	if got := Unified("a", "b", a, b); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Unified("a", "b", a, a); got != "" {
		t.Errorf("equal texts: %q", got)
	}
	if got := Unified("a", "b", "", "x\n"); got != "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" {
		t.Errorf("from empty: %q", got)
	}
	if got := Unified("a", "b", "x\n", ""); got != "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n" {
		t.Errorf("to empty: %q", got)
	}
}
