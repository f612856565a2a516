package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The decoder fills a Config from the parsed TOML tree, field by field, so
// that every problem names its key ("agent.queue_limit: expected an
// integer, got a string") and all of them are reported together. It is
// driven by the toml struct tags, which are therefore the single list of
// keys: unknown-key checks and KnownKeys read the same tags.

var (
	durationType = reflect.TypeFor[Duration]()
	sizeType     = reflect.TypeFor[Size]()
	usdType      = reflect.TypeFor[USD]()
	verbatimType = reflect.TypeFor[Verbatim]()
	memberKeys   = reflect.TypeFor[MemberKeys]()
)

type decoder struct {
	lookup func(string) (string, bool) // environment, for ${VAR}
	errs   []error
	failed map[string]bool // keys already reported, so validation skips them
}

func (d *decoder) failf(path, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	if d.failed == nil {
		d.failed = make(map[string]bool)
	}
	d.failed[path] = true
}

// tomlFields lists a struct type's keys and field indexes.
func tomlFields(t reflect.Type) []tomlField {
	var out []tomlField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if tag == "" || tag == "-" {
			continue
		}
		out = append(out, tomlField{key: tag, index: i, typ: f.Type})
	}
	return out
}

type tomlField struct {
	key   string
	index int
	typ   reflect.Type
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeStruct sets v's fields from m; keys absent from m keep the value v
// already holds (the default).
func (d *decoder) decodeStruct(path string, m map[string]any, v reflect.Value) {
	for _, f := range tomlFields(v.Type()) {
		val, ok := m[f.key]
		if !ok {
			continue
		}
		d.decodeValue(joinKey(path, f.key), val, v.Field(f.index))
	}
}

func (d *decoder) decodeValue(path string, val any, v reflect.Value) {
	if v.Type() == durationType {
		s, ok := val.(string)
		if !ok {
			d.failf(path, "expected a duration string such as \"30m\", got %s", describe(val))
			return
		}
		s, ok = d.expand(path, s)
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.failf(path, "%q is not a duration (use Go syntax such as \"90s\", \"30m\" or \"1h30m\")", s)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	if v.Type() == sizeType {
		if n, ok := toInt64(val); ok {
			v.SetInt(n)
			return
		}
		s, ok := val.(string)
		if !ok {
			d.failf(path, "expected a size such as \"16KiB\" or a number of bytes, got %s", describe(val))
			return
		}
		if s, ok = d.expand(path, s); !ok {
			return
		}
		n, err := parseSize(s)
		if err != nil {
			d.failf(path, "%q is not a size (write a number of bytes or one with a unit: \"16KiB\", \"64MiB\", \"10MB\")", s)
			return
		}
		v.SetInt(n)
		return
	}
	if v.Type() == usdType {
		d.decodeUSD(path, val, v)
		return
	}
	if _, list := val.([]any); list && v.Type() == memberKeys {
		// cluster.embedded_nkeys was a list before each member's user got
		// its own rights.
		d.failf(path, "is a table of each member's key, such as { build-1 = \"UAAA…\", build-2 = \"UBBB…\" }: "+
			"the embedded server gives each member's user only what that member's part needs (docs/cluster.md)")
		return
	}
	if v.Type() == verbatimType {
		// Templates use $ themselves: no ${VAR} expansion here.
		s, ok := val.(string)
		if !ok {
			d.failf(path, "expected a string, got %s", describe(val))
			return
		}
		v.SetString(s)
		return
	}
	switch v.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			if n, isInt := toInt64(val); isInt {
				// Chat and user ids are numbers on Telegram and Discord.
				d.failf(path, "expected a string, got an integer: write ids in quotes (\"%d\")", n)
				return
			}
			d.failf(path, "expected a string, got %s", describe(val))
			return
		}
		if s, ok = d.expand(path, s); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			d.failf(path, "expected true or false, got %s", describe(val))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := toInt64(val)
		if !ok {
			d.failf(path, "expected an integer, got %s", describe(val))
			return
		}
		if v.OverflowInt(n) {
			d.failf(path, "%d is out of range", n)
			return
		}
		v.SetInt(n)
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		elem.Elem().Set(reflect.ValueOf(elementDefault(v.Type().Elem())))
		before := len(d.errs)
		d.decodeValue(path, val, elem.Elem())
		if len(d.errs) == before {
			v.Set(elem)
		}
	case reflect.Slice:
		arr, ok := val.([]any)
		if !ok {
			d.failf(path, "expected an array, got %s", describe(val))
			return
		}
		out := reflect.MakeSlice(v.Type(), len(arr), len(arr))
		for i, item := range arr {
			elem := out.Index(i)
			if elem.Kind() == reflect.Struct {
				elem.Set(reflect.ValueOf(elementDefault(elem.Type())))
			}
			d.decodeValue(fmt.Sprintf("%s[%d]", path, i), item, elem)
		}
		v.Set(out)
	case reflect.Map:
		m, ok := val.(map[string]any)
		if !ok {
			d.failf(path, "expected a table, got %s", describe(val))
			return
		}
		out := reflect.MakeMapWithSize(v.Type(), len(m))
		for k, item := range m {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decodeValue(joinKey(path, k), item, elem)
			out.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), elem)
		}
		v.Set(out)
	case reflect.Struct:
		m, ok := val.(map[string]any)
		if !ok {
			d.failf(path, "expected a table, got %s", describe(val))
			return
		}
		d.decodeStruct(path, m, v)
	default:
		d.failf(path, "cannot decode into %s", v.Type())
	}
}

// elementDefault is the starting value of one [[array]] entry.
func elementDefault(t reflect.Type) any {
	switch t {
	case reflect.TypeFor[Binding]():
		return defaultBinding()
	case reflect.TypeFor[Cluster]():
		return defaultCluster()
	}
	if t == reflect.TypeFor[Schedule]() {
		return defaultSchedule()
	}
	return reflect.New(t).Elem().Interface()
}

func (d *decoder) expand(path, s string) (string, bool) {
	out, err := expandEnv(s, d.lookup)
	if err != nil {
		d.failf(path, "%v", err)
		return "", false
	}
	return out, true
}

// sizeUnits are the units parseSize accepts: KB and friends are decimal,
// KiB and friends binary, as everywhere else.
var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "MB": 1e6, "GB": 1e9,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
}

// parseSize reads "16KiB", "10 MB" or "4096".
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("no number in %q", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	mult, ok := sizeUnits[strings.TrimSpace(s[i:])]
	if !ok {
		return 0, fmt.Errorf("unknown unit in %q", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

func toInt64(val any) (int64, bool) {
	switch n := val.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint64:
		if n > 1<<63-1 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// describe names a TOML value's kind for an error message. Strings are not
// quoted in full: a misplaced value may be a secret.
func describe(val any) string {
	switch v := val.(type) {
	case string:
		if len(v) <= 16 && !strings.ContainsAny(v, "\n") {
			return "a string (" + strconv.Quote(v) + ")"
		}
		return "a string"
	case bool:
		return "a boolean"
	case int64, int, int32, uint64:
		return "an integer"
	case float64, float32:
		return "a float"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("a %T", val)
}

// checkKeys reports every key of the raw (case-preserving) TOML tree that
// the config does not define, so a typo never goes unnoticed.
func (d *decoder) checkKeys(path string, raw map[string]any, t reflect.Type) {
	fields := tomlFields(t)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(fields, func(f tomlField) bool { return f.key == k })
		if i < 0 {
			msg := "unknown key"
			if s := suggest(k, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", joinKey(path, s))
			}
			d.failf(joinKey(path, k), "%s", msg)
			continue
		}
		f := fields[i]
		ft := f.typ
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem() // an optional table ([cluster])
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			if m, ok := raw[k].(map[string]any); ok {
				d.checkKeys(joinKey(path, k), m, ft)
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			if arr, ok := raw[k].([]any); ok {
				for j, item := range arr {
					if m, ok := item.(map[string]any); ok {
						d.checkKeys(fmt.Sprintf("%s[%d]", joinKey(path, k), j), m, ft.Elem())
					}
				}
			}
		}
	}
}

// suggest returns the known key closest to a misspelt one, if any is close.
func suggest(key string, fields []tomlField) string {
	best, bestDist := "", 3
	lower := strings.ToLower(key)
	for _, f := range fields {
		if f.key == lower {
			return f.key
		}
		if dist := editDistance(lower, f.key); dist < bestDist {
			best, bestDist = f.key, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// KnownKeys lists every key the loader accepts, as dotted paths; keys of
// array-of-table entries are written "platforms[].name".
func KnownKeys() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range tomlFields(t) {
			key := joinKey(prefix, f.key)
			switch {
			case f.typ.Kind() == reflect.Pointer && f.typ.Elem().Kind() == reflect.Struct:
				walk(key, f.typ.Elem())
			case f.typ.Kind() == reflect.Struct && f.typ != durationType:
				walk(key, f.typ)
			case f.typ.Kind() == reflect.Slice && f.typ.Elem().Kind() == reflect.Struct:
				walk(key+"[]", f.typ.Elem())
			default:
				out = append(out, key)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	return out
}
