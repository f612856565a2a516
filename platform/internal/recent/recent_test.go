package recent

import "testing"

func TestMap(t *testing.T) {
	type op struct {
		do   string // "put", "get" or "take"
		key  string
		val  int // put: the value; get/take: the value wanted
		want bool
	}
	tests := []struct {
		name string
		max  int
		ops  []op
		len  int
	}{
		{"put and get", 2, []op{{"put", "a", 1, true}, {"get", "a", 1, true}, {"get", "b", 0, false}}, 1},
		{"oldest forgotten first", 2, []op{
			{"put", "a", 1, true}, {"put", "b", 2, true}, {"put", "c", 3, true},
			{"get", "a", 0, false}, {"get", "b", 2, true}, {"get", "c", 3, true},
		}, 2},
		{"rewrite keeps its age", 2, []op{
			{"put", "a", 1, true}, {"put", "b", 2, true}, {"put", "a", 9, true}, {"get", "a", 9, true},
			{"put", "c", 3, true}, {"get", "a", 0, false}, {"get", "b", 2, true},
		}, 2},
		{"take forgets and frees room", 2, []op{
			{"put", "a", 1, true}, {"put", "b", 2, true}, {"take", "a", 1, true}, {"take", "a", 0, false},
			{"put", "c", 3, true}, {"get", "b", 2, true}, {"get", "c", 3, true},
		}, 2},
		{"zero max holds nothing", 0, []op{{"put", "a", 1, true}, {"get", "a", 0, false}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New[int](tt.max)
			for i, o := range tt.ops {
				var got int
				var ok bool
				switch o.do {
				case "put":
					m.Put(o.key, o.val)
					continue
				case "get":
					got, ok = m.Get(o.key)
				case "take":
					got, ok = m.Take(o.key)
				}
				if got != o.val || ok != o.want {
					t.Errorf("op %d: %s(%q) = %d, %v; want %d, %v", i, o.do, o.key, got, ok, o.val, o.want)
				}
			}
			if n := m.Len(); n != tt.len {
				t.Errorf("Len = %d, want %d", n, tt.len)
			}
		})
	}
}
