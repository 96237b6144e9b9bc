package payonce

import (
	_ "github.com/google/uuid"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jarcoal/httpmock"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/text/currency"
	_ "modernc.org/sqlite"
)
