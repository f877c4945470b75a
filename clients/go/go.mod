module github.com/dlock-project/dlock/clients/go

go 1.19

require (
	github.com/jackc/pgx/v4 v4.15.0
	github.com/lib/pq v1.10.7
)
