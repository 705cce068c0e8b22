"""Generate samples/sb40-user-manual.pdf from the text below (fpdf2): a multi-page manual with bookmarks and tables.

The PDF is committed; run this again only after editing the text: `.venv/bin/python scripts/make_sample_manual.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

TITLE = "Northwind SB-40 Home Battery - User Manual"

SECTIONS: list[tuple[int, str, list[str | list[list[str]]]]] = [
    (
        0,
        "1 About this manual",
        [
            "This manual covers the Northwind SB-40 home battery, firmware 3.2 and later. It is written for the owner "
            "and for the certified installer. Read the safety chapter before you touch the unit.",
            "Throughout the manual, the word 'unit' means the SB-40 cabinet with its built-in inverter. The companion "
            "app is called Northwind Home and runs on phones and tablets.",
        ],
    ),
    (
        0,
        "2 Safety",
        [
            "The SB-40 stores up to 10.2 kWh of energy. Even when the display is dark, the battery terminals can carry "
            "a dangerous voltage. Only a certified installer may open the front cover.",
            "Never install the unit in a bathroom, a sauna or any room where the humidity stays above 85 percent. "
            "Keep a clearance of at least 30 cm above the unit and 20 cm on each side so that air can circulate.",
            "If you smell burning or see smoke, press the red isolation switch on the right side of the cabinet, leave "
            "the room and call the fire service. Do not use water on a battery fire.",
        ],
    ),
    (0, "3 Installation", []),
    (
        1,
        "3.1 Site requirements",
        [
            "Mount the SB-40 on a solid wall that can hold 120 kg, indoors or in a garage. The operating temperature "
            "range is -10 to 45 degrees Celsius; the unit reduces its power outside 5 to 35 degrees.",
            "The installation site needs a Wi-Fi or Ethernet connection for firmware updates and for the app. The unit "
            "works without a network, but it then keeps only 30 days of history.",
        ],
    ),
    (
        1,
        "3.2 Mounting",
        [
            "Fix the wall bracket with the four M8 anchors supplied. Check that the bracket is level before you hang the "
            "cabinet: a tilt of more than 2 degrees triggers warning W11 at start-up.",
            "Two people are needed to lift the cabinet onto the bracket. Secure it with the safety screw at the bottom.",
        ],
    ),
    (
        1,
        "3.3 Wiring",
        [
            "Connect the AC output to a dedicated 32 A circuit breaker. The DC input accepts solar strings from 150 to "
            "550 V; use cables of at least 6 mm2.",
            "Tighten the AC terminals to 2.5 Nm and the DC terminals to 4 Nm. Loose terminals are the most common cause "
            "of error E07 in the first month after installation.",
        ],
    ),
    (
        0,
        "4 Operating modes",
        [
            "The SB-40 has three operating modes, chosen in the app under Settings > Mode.",
            "Self-consumption mode stores surplus solar energy during the day and releases it in the evening. It is the "
            "default mode and suits most homes.",
            "Time-of-use mode charges from the grid when electricity is cheap and discharges during peak hours. Enter "
            "your tariff's peak hours in the app; the unit follows them to the minute.",
            "Backup mode keeps the battery at least 80 percent full so that the house can run through a power cut. "
            "During a cut the unit switches over in less than 20 milliseconds.",
        ],
    ),
    (
        0,
        "5 Technical specifications",
        [
            [
                ["Parameter", "Value"],
                ["Usable capacity", "10.2 kWh"],
                ["Continuous power", "5 kW"],
                ["Peak power (10 s)", "7.5 kW"],
                ["Round-trip efficiency", "94 percent"],
                ["Solar input voltage", "150 to 550 V DC"],
                ["Weight", "98 kg"],
                ["Dimensions (H x W x D)", "1150 x 600 x 190 mm"],
                ["Noise", "below 30 dB(A)"],
                ["Warranty", "10 years or 6000 cycles"],
            ],
            "The capacity figure is measured at 25 degrees Celsius at the start of life. After 6000 full cycles the "
            "unit keeps at least 70 percent of its usable capacity.",
        ],
    ),
    (
        0,
        "6 Maintenance",
        [
            "The SB-40 needs no routine maintenance from the owner. Once a year, check that the air vents are free of "
            "dust and that nothing is stored within the clearance zone.",
            "Firmware updates install themselves at night between 02:00 and 04:00. The unit keeps supplying power "
            "during an update; only the display turns off for about two minutes.",
        ],
    ),
    (
        0,
        "7 Troubleshooting",
        [
            "The display shows a code when something needs attention. Codes starting with W are warnings: the unit keeps "
            "working. Codes starting with E are errors: the unit stops charging and discharging until the cause is removed.",
            [
                ["Code", "Meaning", "What to do"],
                ["W03", "Battery temperature high", "Improve ventilation; the unit limits power until it cools"],
                ["W11", "Cabinet not level", "Re-level the wall bracket"],
                [
                    "E04",
                    "Grid voltage out of range",
                    "Wait 10 minutes; if it repeats, ask your grid operator to check the voltage",
                ],
                ["E07", "DC insulation fault", "Switch off the solar isolator and call your installer"],
                [
                    "E12",
                    "Internal communication lost",
                    "Restart with the isolation switch; contact support if it returns",
                ],
            ],
            "If a code is not listed here, note it together with the time it appeared and contact Northwind support "
            "through the app.",
        ],
    ),
    (
        0,
        "8 Warranty",
        [
            "Northwind guarantees the SB-40 for 10 years from the installation date or 6000 full cycles, whichever comes "
            "first. The warranty requires registration in the app within 60 days of installation.",
            "The warranty does not cover damage from floods, from installation outside the temperature range, or from "
            "opening the cabinet without certification.",
        ],
    ),
]


class Manual(FPDF):
    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 8, TITLE, align="R")
            self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "I", 8)
        self.cell(0, 10, f"Page {self.page_no()}", align="C")


def build(target: Path) -> None:
    pdf = Manual(format="A5")
    pdf.set_title(TITLE)
    pdf.set_author("pagegraph samples")
    pdf.set_creation_date(datetime(2026, 11, 1, tzinfo=UTC))  # fixed, so regenerating gives the same bytes
    pdf.set_auto_page_break(auto=True, margin=18)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.multi_cell(0, 10, TITLE)
    pdf.ln(4)
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 6, "Model SB-40, firmware 3.2. Keep this manual near the unit.")
    for level, title, blocks in SECTIONS:
        if level == 0:
            pdf.add_page()
        pdf.start_section(title, level=level)
        pdf.set_font("Helvetica", "B", 14 if level == 0 else 12)
        pdf.multi_cell(0, 8, title)
        pdf.ln(2)
        for block in blocks:
            if isinstance(block, list):
                pdf.set_font("Helvetica", "", 8)
                with pdf.table(first_row_as_headings=True) as table:
                    for row in block:
                        cells = table.row()
                        for value in row:
                            cells.cell(value)
                pdf.ln(3)
            else:
                pdf.set_font("Helvetica", "", 10)
                pdf.multi_cell(0, 5.5, block)
                pdf.ln(2)
    pdf.output(str(target))


if __name__ == "__main__":
    build(Path(__file__).resolve().parents[1] / "samples" / "sb40-user-manual.pdf")
