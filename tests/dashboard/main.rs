//! The dashboard: its HTTP API, and the page driven in Debian's Chromium.

mod dashboard;
mod dashboard_browser;
mod dashboard_fleet_browser;
mod dashboard_safety;
