/* dlock--1.1--1.2.sql */
-- Copyright (c) 2026, the dlock developers

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.2'" to load this file. \quit

-- 1.2 has no full install script of its own: CREATE EXTENSION dlock runs
-- dlock--1.1.sql and then this file, so every 1.2 object is written once.
-- The upgrade test (test/t/012_upgrade.pl) still compares two independent
-- paths: 1.0 -> 1.1 -> 1.2 against 1.1 -> 1.2.
--
-- Each change below names the issue and item it belongs to.
