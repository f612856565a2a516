package config

import (
	"errors"
	"fmt"
	"strings"
)

// expandEnv replaces each ${NAME} in s with the value of the environment
// variable NAME, as lookup reports it. "$$" stands for a literal "$". Any
// other "$" is an error rather than a literal: "$TOKEN" is almost always a
// reference written the shell way, and sending the text "$TOKEN" to Slack as
// a token fails far from its cause. Errors never quote s, which may hold a
// secret.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			return "", errors.New(`a "$" must start ${NAME} (an environment variable) or be doubled as "$$" (a literal $)`)
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", errors.New(`"${" without a closing "}"`)
		}
		name := s[i+2 : i+2+end]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} is not a valid environment variable reference (letters, digits and _, not starting with a digit)", name)
		}
		val, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(val)
		i += 2 + end
	}
	return b.String(), nil
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
