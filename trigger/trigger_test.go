package trigger

import "testing"

func TestIsRunUser(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{RunUser(KindSchedule, "nightly"), true},
		{RunUser(KindWebhook, "deploy"), true},
		{"U024BE7LH", false},         // Slack
		{"80351110224678912", false}, // Discord
		{"123456789", false},         // Telegram
		{"local", false},             // the terminal
		{"", false},
		{"schedule", false},
	} {
		if got := IsRunUser(tc.id); got != tc.want {
			t.Errorf("IsRunUser(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
