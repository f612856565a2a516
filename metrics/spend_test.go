package metrics

import "testing"

func TestSpendGaugesFollowTheFunc(t *testing.T) {
	t.Parallel()
	m := New()
	if _, ok := sample(scrape(t, m.Handler()), `cc_connect_spend_day_usd{binding="slack/C1",user=""}`); ok {
		t.Error("spend reported before a func was set")
	}
	rows := []Spend{{Binding: "slack/C1", Day: 1.25, Month: 7.5}, {Binding: "slack/C1", User: "U1", Day: 0.25, Month: 2}}
	m.SetSpendFunc(func() []Spend { return rows })
	body := scrape(t, m.Handler())
	for _, tt := range []struct{ series, want string }{
		{`cc_connect_spend_day_usd{binding="slack/C1",user=""}`, "1.25"},
		{`cc_connect_spend_month_usd{binding="slack/C1",user=""}`, "7.5"},
		{`cc_connect_spend_day_usd{binding="slack/C1",user="U1"}`, "0.25"},
		{`cc_connect_spend_month_usd{binding="slack/C1",user="U1"}`, "2"},
	} {
		if got, _ := sample(body, tt.series); got != tt.want {
			t.Errorf("%s = %q, want %s", tt.series, got, tt.want)
		}
	}
	// A new day: the user's row is gone from the ledger, and from the scrape.
	rows = rows[:1]
	if _, ok := sample(scrape(t, m.Handler()), `cc_connect_spend_day_usd{binding="slack/C1",user="U1"}`); ok {
		t.Error("a row the func no longer returns is still reported")
	}
	var nilM *Metrics
	nilM.SetSpendFunc(nil) // must not panic
}
