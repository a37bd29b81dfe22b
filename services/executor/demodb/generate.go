package demodb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The generator's fixed seed: change it and every row changes.
const seed1, seed2 = 0x50_4e_44_45, 0x2024_0601

// dipMonth is the month whose signups and orders fall, and whose card
// payments often failed.
var dipMonth = time.Date(2025, time.March, 1, 0, 0, 0, 0, time.UTC)

type table struct {
	name   string
	insert string
	rows   [][]any
}

type customer struct {
	id      int
	name    string
	email   string
	country string
	segment string
	signup  time.Time
}

type product struct {
	id       int
	sku      string
	name     string
	category string
	price    int
	active   int
}

type order struct {
	id       int
	customer int
	at       time.Time
	status   string
	total    int
}

type data struct {
	customers []customer
	products  []product
	orders    []order
	items     [][]any
	payments  [][]any
}

func generate() *data {
	r := rand.New(rand.NewPCG(seed1, seed2))
	d := &data{}
	d.customers = genCustomers(r)
	d.products = genProducts(r)
	d.genOrders(r)
	return d
}

func (d *data) tables() []table {
	cust := make([][]any, len(d.customers))
	for i, c := range d.customers {
		cust[i] = []any{c.id, c.name, c.email, c.country, c.segment, c.signup.Format(time.DateOnly)}
	}
	prod := make([][]any, len(d.products))
	for i, p := range d.products {
		prod[i] = []any{p.id, p.sku, p.name, p.category, p.price, p.active}
	}
	ord := make([][]any, len(d.orders))
	for i, o := range d.orders {
		ord[i] = []any{o.id, o.customer, o.at.Format(time.DateTime), o.status, o.total, "EUR"}
	}
	return []table{
		{"customers", "INSERT INTO customers (id, name, email, country, segment, signup_date) VALUES (?, ?, ?, ?, ?, ?)", cust},
		{"products", "INSERT INTO products (id, sku, name, category, price_cents, active) VALUES (?, ?, ?, ?, ?, ?)", prod},
		{"orders", "INSERT INTO orders (id, customer_id, ordered_at, status, total_cents, currency) VALUES (?, ?, ?, ?, ?, ?)", ord},
		{"order_items", "INSERT INTO order_items (id, order_id, product_id, quantity, unit_price_cents) VALUES (?, ?, ?, ?, ?)", d.items},
		{"payments", "INSERT INTO payments (id, order_id, attempted_at, method, status, amount_cents) VALUES (?, ?, ?, ?, ?, ?)", d.payments},
	}
}

// monthly spreads total over the months from first, count of them, growing
// a little each month, with the dip month at a third of its trend.
func monthly(first time.Time, months, total int) []int {
	weights := make([]float64, months)
	sum := 0.0
	for i := range weights {
		w := 100 + 3*float64(i)
		if first.AddDate(0, i, 0).Equal(dipMonth) {
			w *= 0.35
		}
		weights[i] = w
		sum += w
	}
	// Largest remainder, ties to the earlier month: the counts sum to total.
	counts := make([]int, months)
	type rem struct {
		i int
		f float64
	}
	rems := make([]rem, months)
	given := 0
	for i, w := range weights {
		exact := w / sum * float64(total)
		counts[i] = int(exact)
		given += counts[i]
		rems[i] = rem{i, exact - float64(counts[i])}
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.f > b.f:
			return -1
		case a.f < b.f:
			return 1
		}
		return 0
	})
	for k := 0; given < total; k++ {
		counts[rems[k].i]++
		given++
	}
	return counts
}

// instants draws n times uniformly inside the month starting at m, sorted.
func instants(r *rand.Rand, m time.Time, n int) []time.Time {
	span := int64(m.AddDate(0, 1, 0).Sub(m) / time.Second)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = m.Add(time.Duration(r.Int64N(span)) * time.Second)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// weighted picks a key by weight; keys and weights are parallel.
func weighted(r *rand.Rand, keys []string, weights []int) string {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := r.IntN(total)
	for i, w := range weights {
		if n < w {
			return keys[i]
		}
		n -= w
	}
	return keys[len(keys)-1]
}

var (
	firstNames = []string{"Anna", "Ben", "Clara", "David", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas",
		"Katrin", "Lukas", "Marie", "Noah", "Olivia", "Paul", "Quentin", "Rosa", "Simon", "Tara",
		"Ugo", "Vera", "William", "Xenia", "Yusuf", "Zoe", "Amelie", "Bruno", "Chloe", "Emil",
		"Fatima", "Gabriel", "Hanna", "Ivan", "Julia", "Karim", "Lea", "Mateo", "Nina", "Oskar"}
	lastNames = []string{"Müller", "Schmidt", "Dubois", "Martin", "Rossi", "Bianchi", "García", "López", "de Vries", "Jansen",
		"Nowak", "Kowalski", "Andersson", "Nilsson", "Smith", "Jones", "Peeters", "Maes", "Gruber", "Huber",
		"Fischer", "Weber", "Moreau", "Laurent", "Romano", "Colombo", "Fernández", "Bakker", "Visser", "Lindqvist"}
	countries      = []string{"DE", "FR", "NL", "ES", "IT", "BE", "AT", "PL", "SE", "GB", "US"}
	countryWeights = []int{24, 16, 10, 10, 9, 6, 5, 6, 4, 6, 4}
	domains        = []string{"example.com", "example.org", "example.net"}
)

func genCustomers(r *rand.Rand) []customer {
	first := time.Date(2023, time.July, 1, 0, 0, 0, 0, time.UTC)
	const months = 24 // 2023-07 .. 2025-06
	var out []customer
	for i, n := range monthly(first, months, Customers) {
		for _, at := range instants(r, first.AddDate(0, i, 0), n) {
			id := len(out) + 1
			fn, ln := pick(r, firstNames), pick(r, lastNames)
			local := strings.ToLower(fn + "." + strings.ReplaceAll(ln, " ", ""))
			out = append(out, customer{
				id:      id,
				name:    fn + " " + ln,
				email:   fmt.Sprintf("%s%d@%s", asciiFold(local), id, pick(r, domains)),
				country: weighted(r, countries, countryWeights),
				segment: weighted(r, []string{"consumer", "business"}, []int{85, 15}),
				signup:  at.Truncate(24 * time.Hour),
			})
		}
	}
	return out
}

func asciiFold(s string) string {
	return strings.NewReplacer("ü", "u", "í", "i", "á", "a").Replace(s)
}

var catalogue = []struct {
	category       string
	nouns          []string
	minEUR, maxEUR int
}{
	{"Electronics", []string{"Headphones", "Charger", "Speaker", "Keyboard", "Webcam", "Power Bank", "Mouse", "Monitor Arm"}, 15, 240},
	{"Books", []string{"Cookbook", "Novel", "Atlas", "Field Guide", "Notebook", "Planner"}, 8, 45},
	{"Home", []string{"Lamp", "Throw Blanket", "Mug Set", "Cushion", "Vase", "Wall Clock"}, 12, 120},
	{"Garden", []string{"Trowel", "Planter", "Hose", "Seed Kit", "Pruner"}, 6, 90},
	{"Toys", []string{"Puzzle", "Building Set", "Plush Bear", "Board Game", "Kite"}, 10, 80},
	{"Sports", []string{"Yoga Mat", "Water Bottle", "Jump Rope", "Dumbbell Pair", "Running Belt"}, 9, 110},
	{"Beauty", []string{"Face Cream", "Shampoo", "Soap Bar", "Lip Balm"}, 4, 55},
	{"Grocery", []string{"Coffee Beans", "Olive Oil", "Tea Sampler", "Dark Chocolate", "Honey"}, 3, 30},
}

var adjectives = []string{"Classic", "Compact", "Deluxe", "Eco", "Essential", "Nordic", "Pro", "Travel", "Urban", "Vintage"}

func genProducts(r *rand.Rand) []product {
	out := make([]product, 0, Products)
	seen := map[string]bool{}
	for len(out) < Products {
		c := catalogue[len(out)%len(catalogue)]
		name := pick(r, adjectives) + " " + pick(r, c.nouns)
		if seen[name] {
			continue
		}
		seen[name] = true
		id := len(out) + 1
		euros := c.minEUR + r.IntN(c.maxEUR-c.minEUR+1)
		out = append(out, product{
			id:       id,
			sku:      fmt.Sprintf("%s-%04d", strings.ToUpper(c.category[:3]), 1000+id*7),
			name:     name,
			category: c.category,
			price:    euros*100 + pick(r, []int{0, 49, 90, 95, 99}),
			active:   map[bool]int{true: 1, false: 0}[r.IntN(10) != 0],
		})
	}
	return out
}

var (
	methods       = []string{"card", "paypal", "bank_transfer", "gift_card"}
	methodWeights = []int{60, 25, 10, 5}
)

func (d *data) genOrders(r *rand.Rand) {
	first := time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)
	const months = 18 // 2024-01 .. 2025-06
	end := first.AddDate(0, months, 0)
	// customers are in signup order: those who could order by a time are a prefix.
	for i, n := range monthly(first, months, Orders) {
		month := first.AddDate(0, i, 0)
		for _, at := range instants(r, month, n) {
			signedUp, _ := slices.BinarySearchFunc(d.customers, at, func(c customer, t time.Time) int {
				return c.signup.Compare(t)
			})
			o := order{id: len(d.orders) + 1, customer: d.customers[r.IntN(max(signedUp, 1))].id, at: at}
			o.total = d.genItems(r, o.id)
			d.genPayments(r, &o, month.Equal(dipMonth), end.Sub(at) < 14*24*time.Hour)
			d.orders = append(d.orders, o)
		}
	}
}

// genItems adds one to four distinct products to order id and returns its total.
func (d *data) genItems(r *rand.Rand, orderID int) int {
	n := 1 + r.IntN(4)
	chosen := map[int]bool{}
	total := 0
	for len(chosen) < n {
		p := d.products[r.IntN(len(d.products))]
		if chosen[p.id] || (p.active == 0 && r.IntN(3) != 0) {
			continue
		}
		chosen[p.id] = true
		qty := 1
		if r.IntN(10) >= 7 {
			qty += 1 + r.IntN(3)
		}
		price := p.price
		if r.IntN(8) == 0 { // an occasional 10 % promotion
			price = price * 9 / 10
		}
		total += qty * price
		d.items = append(d.items, []any{len(d.items) + 1, orderID, p.id, qty, price})
	}
	return total
}

// genPayments sets the order's status and records its payment attempts.
func (d *data) genPayments(r *rand.Rand, o *order, dip, recent bool) {
	method := weighted(r, methods, methodWeights)
	attempt := o.at.Add(time.Duration(30+r.IntN(600)) * time.Second)
	pay := func(status string, at time.Time, m string) {
		d.payments = append(d.payments, []any{len(d.payments) + 1, o.id, at.Format(time.DateTime), m, status, o.total})
	}
	failRate := 4 // percent of card attempts that fail
	if dip {
		failRate = 45
	}
	if method == "card" && r.IntN(100) < failRate {
		pay("failed", attempt, method)
		attempt = attempt.Add(time.Duration(60+r.IntN(3600)) * time.Second)
		if r.IntN(100) < 50 { // half give up
			o.status = "cancelled"
			return
		}
		method = weighted(r, methods, methodWeights)
	}
	switch n := r.IntN(100); {
	case recent && n < 35, n < 1:
		o.status = "pending"
		if method == "bank_transfer" {
			return // awaiting the transfer: no attempt yet
		}
		pay("failed", attempt, method)
	case n < 4:
		o.status = "cancelled"
		pay("failed", attempt, method)
	case n < 11:
		o.status = "refunded"
		pay("captured", attempt, method)
		pay("refunded", attempt.Add(time.Duration(2+r.IntN(20))*24*time.Hour), method)
	default:
		o.status = "paid"
		pay("captured", attempt, method)
	}
}
