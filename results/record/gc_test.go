package record

import (
	"context"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

func TestUnreferenced(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(k, v string) {
		if err := st.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	ka, kb := Key("t1", Builtin()), Key("t2", Builtin())
	put(storage.StoredResultKey(ka), `{"task":{"id":"t1"}}`)
	put(storage.StoredResultKey(kb), `{"task":{"id":"t2"}}`)
	put(storage.ResultKey("c1", "t1"), string(RefJSON(ka)))
	put(storage.ResultKey("c1", "t3"), `{"task":{"id":"t3"},"error":"boom"}`) // a failure in place
	got, err := Unreferenced(ctx, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != storage.StoredResultKey(kb) || got[0].Size == 0 {
		t.Fatalf("unreferenced %+v, want only %s", got, storage.StoredResultKey(kb))
	}
	if got, err := Unreferenced(ctx, st, time.Hour); err != nil || len(got) != 0 {
		t.Fatalf("with min age 1h: %+v, %v; want none (just written)", got, err)
	}
}

func TestKeyCoversCode(t *testing.T) {
	base := Key("task", Builtin())
	for _, im := range []Impl{
		{Engine: "9.9.9", Policy: "builtin"},
		Plugin(Builtin().Engine, "aa"),
		Plugin(Builtin().Engine, "bb"),
	} {
		if Key("task", im) == base {
			t.Errorf("impl %+v has the built-in key", im)
		}
	}
	if Key("task", Plugin("1", "aa")) == Key("task", Plugin("1", "bb")) || Key("task", Builtin()) == Key("other", Builtin()) {
		t.Error("keys collide")
	}
	if k := Key("task", Builtin()); k != base || len(k) != 32 {
		t.Errorf("key %q not stable or not 32 hex digits", k)
	}
	im, ok := ImplOf(Provenance{Runner: "plugin", PluginSHA256: "aa", Engine: "1"})
	if !ok || im != Plugin("1", "aa") {
		t.Errorf("ImplOf(plugin) = %+v, %v", im, ok)
	}
	if _, ok := ImplOf(Provenance{Runner: "synthetic"}); ok {
		t.Error("a provenance without engine has an impl")
	}
}
