package metrics

import "github.com/prometheus/client_golang/prometheus"

// Spend is one row of the current spend: a binding's total (User "") or a
// user's in it, for today and this month, in USD.
type Spend struct {
	Binding, User string
	Day, Month    float64
}

// SetSpendFunc sets what reports the current spend, called at each scrape
// (the binary passes the spending ledger's figures). nil removes it.
func (m *Metrics) SetSpendFunc(f func() []Spend) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.spendFunc = f
	m.mu.Unlock()
}

// spendCollector reports the spend func at scrape time, so that a day or a
// month that rolls over shows its new, smaller figure without anyone
// resetting a gauge.
type spendCollector struct {
	m          *Metrics
	day, month *prometheus.Desc
}

func newSpendCollector(m *Metrics) spendCollector {
	labels := []string{"binding", "user"}
	return spendCollector{m: m,
		day: prometheus.NewDesc(Namespace+"_spend_day_usd",
			"What Claude Code's turns cost today (in [spend] timezone), in USD, by binding (user=\"\": the binding's total) and user.", labels, nil),
		month: prometheus.NewDesc(Namespace+"_spend_month_usd",
			"What Claude Code's turns cost this month, in USD, by binding (user=\"\": the binding's total) and user.", labels, nil)}
}

func (c spendCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.day; ch <- c.month }

func (c spendCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	f := c.m.spendFunc
	c.m.mu.Unlock()
	if f == nil {
		return
	}
	for _, s := range f() {
		ch <- prometheus.MustNewConstMetric(c.day, prometheus.GaugeValue, s.Day, s.Binding, s.User)
		ch <- prometheus.MustNewConstMetric(c.month, prometheus.GaugeValue, s.Month, s.Binding, s.User)
	}
}

var _ prometheus.Collector = spendCollector{}
