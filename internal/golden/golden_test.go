package golden

import "testing"

// TestJSON: a number one ulp off passes, one beyond Tol, a changed count,
// string, key or length does not.
func TestJSON(t *testing.T) {
	want := `{"a": [1, 2.5, "x"], "b": {"c": 0.1}}`
	for _, c := range []struct {
		got    string
		differ int
		ok     bool
	}{
		{`{"a": [1, 2.5, "x"], "b": {"c": 0.1}}`, 0, true},
		{`{"a": [1, 2.5000000000000004, "x"], "b": {"c": 0.10000000000000002}}`, 2, true}, // one ulp each
		{`{"a": [1, 2.5000001, "x"], "b": {"c": 0.1}}`, 0, false},                         // 4·10⁻⁸
		{`{"a": [2, 2.5, "x"], "b": {"c": 0.1}}`, 0, false},
		{`{"a": [1, 2.5, "y"], "b": {"c": 0.1}}`, 0, false},
		{`{"a": [1, "2.5", "x"], "b": {"c": 0.1}}`, 0, false},
		{`{"a": [1, 2.5], "b": {"c": 0.1}}`, 0, false},
		{`{"a": [1, 2.5, "x"], "b": {"d": 0.1}}`, 0, false},
		{`{"a": [1, 2.5, "x"], "b": {"c": 0.1}, "e": 1}`, 0, false},
	} {
		n, err := JSON([]byte(want), []byte(c.got))
		if (err == nil) != c.ok || (c.ok && n != c.differ) {
			t.Errorf("%s: %d differ, %v", c.got, n, err)
		}
	}
}

// TestText: the same rules number by number, the text around them
// unchanged (a CSV file here).
func TestText(t *testing.T) {
	want := "p,mean,hw\nA,63.531023680873446,inf\n"
	for _, c := range []struct {
		got    string
		differ int
		ok     bool
	}{
		{want, 0, true},
		{"p,mean,hw\nA,63.53102368087345,inf\n", 1, true}, // arm64's half-width
		{"p,mean,hw\nA,63.53103,inf\n", 0, false},         // 10⁻⁷
		{"p,mean,hw\nB,63.531023680873446,inf\n", 0, false},
		{"p,mean,hw\nA,63.531023680873446,\n", 0, false},
		{"p,mean\nA,63.531023680873446\n", 0, false},
		{"p,mean,hw\n", 0, false},
		{"p,mean,hw\nA,-63.531023680873446,inf\n", 0, false},
	} {
		n, err := Text([]byte(want), []byte(c.got))
		if (err == nil) != c.ok || (c.ok && n != c.differ) {
			t.Errorf("%q: %d differ, %v", c.got, n, err)
		}
	}
}

// TestFirstDiff: the line named is the first that differs, a missing line
// included.
func TestFirstDiff(t *testing.T) {
	for _, c := range []struct {
		want, got string
		line      int
	}{
		{"a\nb\nc", "a\nB\nc", 2},
		{"a\nb", "a\nb\nc", 3},
		{"a\nb\n", "a\nb", 3},
	} {
		if i, _, _ := firstDiff([]byte(c.want), []byte(c.got)); i != c.line {
			t.Errorf("%q against %q: line %d, want %d", c.got, c.want, i, c.line)
		}
	}
}
