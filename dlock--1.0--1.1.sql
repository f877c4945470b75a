/* dlock--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.1'" to load this file. \quit

-- Every change below has its twin in dlock--1.1.sql; the upgrade test proves
-- that both paths give the same objects.

-- 1.1: hardening (issue 13)

-- 1.1: fencing (issue 11)

-- 1.1: tokens (issue 12)

-- 1.1: waiting and events (issue 16)

-- 1.1: package (issue 15)
